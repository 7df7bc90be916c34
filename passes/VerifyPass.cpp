// placeholder: passes/VerifyPass.cpp
