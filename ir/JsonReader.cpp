// placeholder: ir/JsonReader.cpp
