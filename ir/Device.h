//===- ir/Device.h - concrete devices and group names -------------------===//
#pragma once

#include <optional>
#include <string>

namespace mpc::ir {

struct Device {
  enum Kind : uint8_t { CPU, GPU };
  Kind kind = CPU;
  int index = 0;
  std::string str() const; ///< "cpu:0", "gpu:2"
  bool operator==(const Device &) const = default;
  auto operator<=>(const Device &) const = default;
};

/// Parses "cpu:N" / "gpu:N" (N a decimal below 1024); nullopt otherwise,
/// which callers treat as a group name when it is a valid identifier.
std::optional<Device> parseDevice(const std::string &s);

/// Group names: [A-Za-z_][A-Za-z0-9_.-]*, and not of the form kind:N.
bool isValidGroupName(const std::string &s);

} // namespace mpc::ir
