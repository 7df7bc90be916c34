// placeholder: passes/AutoPlace.cpp
