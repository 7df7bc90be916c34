// placeholder: passes/PassRegistry.cpp
