// placeholder: passes/Place.cpp
