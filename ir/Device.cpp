//===- ir/Device.cpp - concrete devices and group names -----------------===//
#include "ir/Device.h"

#include <cctype>

namespace mpc::ir {

std::string Device::str() const {
  return std::string(kind == CPU ? "cpu:" : "gpu:") + std::to_string(index);
}

std::optional<Device> parseDevice(const std::string &s) {
  Device d;
  std::string rest;
  if (s.rfind("cpu:", 0) == 0) {
    d.kind = Device::CPU;
    rest = s.substr(4);
  } else if (s.rfind("gpu:", 0) == 0) {
    d.kind = Device::GPU;
    rest = s.substr(4);
  } else {
    return std::nullopt;
  }
  if (rest.empty() || rest.size() > 4) return std::nullopt;
  int v = 0;
  for (char c : rest) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v >= 1024) return std::nullopt;
  d.index = v;
  return d;
}

std::optional<std::vector<Device>> parseDeviceSet(const std::string &s) {
  std::vector<Device> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(kDeviceSetSeparator, start);
    std::optional<Device> d =
        parseDevice(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (!d || (!out.empty() && d->kind != out[0].kind)) return std::nullopt;
    for (const Device &o : out)
      if (o == *d) return std::nullopt;
    out.push_back(*d);
    if (out.size() > 64) return std::nullopt;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (out.size() < 2) return std::nullopt;
  return out;
}

std::vector<std::string> deviceSetMembers(const std::string &s) {
  std::vector<std::string> out;
  if (auto set = parseDeviceSet(s))
    for (const Device &d : *set) out.push_back(d.str());
  return out;
}

bool isPlacedDevice(const std::string &s) {
  return parseDevice(s).has_value() || parseDeviceSet(s).has_value();
}

bool isValidGroupName(const std::string &s) {
  if (s.empty() || s.find(':') != std::string::npos) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

} // namespace mpc::ir
