// placeholder: ir/Printer.cpp
