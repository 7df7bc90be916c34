// placeholder: passes/InsertCopies.cpp
