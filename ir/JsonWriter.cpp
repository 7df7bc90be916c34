// placeholder: ir/JsonWriter.cpp
