// placeholder: passes/Canonicalize.cpp
