// placeholder: ir/Verifier.cpp
