// placeholder: passes/OptimizeStep.cpp
