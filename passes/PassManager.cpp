// placeholder: passes/PassManager.cpp
