// placeholder: passes/Pipelines.cpp
