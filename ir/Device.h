//===- ir/Device.h - concrete devices and group names -------------------===//
#pragma once

#include <optional>
#include <string>
#include <vector>

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

/// The separator of a device set, a group mapped to several devices:
/// "cpu:0+cpu:1" (tensor parallelism).
inline constexpr char kDeviceSetSeparator = '+';

/// Parses a device set "cpu:0+cpu:1+..." of at least two distinct concrete
/// devices of one kind; nullopt otherwise.
std::optional<std::vector<Device>> parseDeviceSet(const std::string &s);

/// The devices of device set `s` ("cpu:0", "cpu:1"), in order; empty when
/// `s` is no device set (a single device, a group name).
std::vector<std::string> deviceSetMembers(const std::string &s);

/// A node's device after placement: concrete, or a device set.
bool isPlacedDevice(const std::string &s);

/// Group names: [A-Za-z_][A-Za-z0-9_.-]*, and not of the form kind:N.
bool isValidGroupName(const std::string &s);

} // namespace mpc::ir
