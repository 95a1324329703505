// aisrv hailo8 — discover, open and check the Hailo-8 the configured network group will use (device_check.hpp).
#include "device_check.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/driver/device.hpp"

namespace aisrv::engine::hailo8 {
namespace {

// Opens one node through the driver layer and checks it; the error message names the kind of problem.
Result<driver::DriverVersion> check_node(driver::DriverOpener& opener, const std::string& path) {
  auto dev = driver::HailoDevice::open(path, opener);
  if (!dev) {
    const Error& e = dev.error();
    switch (e.code) {
      case Errc::not_found: return make_error(Errc::infer_error, "no Hailo-8 at {}: no such device node", path);
      case Errc::incompatible: return make_error(Errc::infer_error, "driver version unsupported: {}", e.message);
      case Errc::not_supported: return make_error(Errc::infer_error, "no Hailo-8 at {}", e.message);
      default: return make_error(Errc::infer_error, "cannot use the Hailo-8 at {}: {}", path, e.message);
    }
  }
  if (!dev->properties().fw_loaded)
    return make_error(Errc::infer_error,
                      "cannot use the Hailo-8 at {}: the hailo_pci driver reports no firmware loaded (hailo8_fw.bin "
                      "missing?)",
                      path);
  return dev->driver_version();
  // The node is closed here: libhailort opens the device itself.
}

}  // namespace

Result<CheckedDevice> check_device(driver::DriverOpener& opener, const driver::DiscoveryPaths& paths,
                                   const std::string& device) {
  auto found = driver::discover(paths);
  if (!found) return make_error(Errc::infer_error, "no Hailo-8 device found: {}", found.error().message);

  if (!device.empty()) {
    // The sysfs entry of a node has the node's file name (hailo_chardev publishes /dev/<name>).
    const std::string name = std::filesystem::path(device).filename().string();
    const driver::DiscoveredDevice* entry = nullptr;
    for (const auto& d : *found)
      if (d.name == name && d.in_sysfs) entry = &d;
    CheckedDevice c;
    c.path = device;
    c.driver = AISRV_TRY(check_node(opener, device));
    if (!entry || !entry->board_location) {
      std::string why = entry ? "" : fmt::format("{} does not list {}", paths.sysfs_class.string(), name);
      if (entry)
        for (const auto& note : entry->notes) why += (why.empty() ? "" : "; ") + note;
      return make_error(Errc::infer_error,
                        "cannot use the Hailo-8 at {}: its PCI address, which HailoRT selects devices by, is "
                        "unknown ({})",
                        device, why.empty() ? "no board_location" : why);
    }
    c.board_location = entry->board_location;
    return c;
  }

  std::optional<CheckedDevice> chosen;
  std::optional<Error> first_problem;
  std::vector<std::string> notes;
  bool all_pass = true;
  size_t candidates = 0;
  for (const auto& d : *found) {
    if (!d.node_exists) continue;
    if (!d.maybe_hailo8()) {
      all_pass = false;  // HailoRT could pick this other accelerator: select ours explicitly
      notes.push_back(fmt::format("passed over: {} is not a Hailo-8 (accelerator type {}, PCI id {})", d.dev_path,
                                  d.accelerator_type ? std::to_string(*d.accelerator_type) : "?",
                                  d.device_id.value_or("?")));
      continue;
    }
    ++candidates;
    auto version = check_node(opener, d.dev_path);
    if (!version) {
      all_pass = false;
      notes.push_back(fmt::format("passed over: {}", version.error().message));
      if (!first_problem) first_problem = version.error();
      continue;
    }
    if (!chosen) {
      chosen = CheckedDevice{d.dev_path, d.board_location, *version, {}};
    }
  }
  if (candidates == 0) return Error{Errc::infer_error, driver::no_hailo8_message(*found, paths)};
  if (!chosen) {
    if (candidates > 1) first_problem->message += fmt::format(" (and {} more device(s) refused)", candidates - 1);
    return std::move(*first_problem);
  }
  if (all_pass) {
    chosen->board_location.reset();  // HailoRT picks the first free device among those we checked
  } else if (!chosen->board_location) {
    return make_error(Errc::infer_error,
                      "cannot use the Hailo-8 at {}: other devices were refused and its PCI address, which HailoRT "
                      "selects devices by, is unknown",
                      chosen->path);
  }
  chosen->notes = std::move(notes);
  return std::move(*chosen);
}

}  // namespace aisrv::engine::hailo8
