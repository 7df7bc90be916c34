// placeholder: ir/Interpreter.cpp
