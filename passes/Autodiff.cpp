// placeholder: passes/Autodiff.cpp
