// placeholder: ir/Init.cpp
