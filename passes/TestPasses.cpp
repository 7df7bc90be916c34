// placeholder: passes/TestPasses.cpp
