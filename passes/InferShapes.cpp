// placeholder: passes/InferShapes.cpp
