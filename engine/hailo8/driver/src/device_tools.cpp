// aisrv hailo8/driver — scan / identify tools and their text output (modelled on `hailortcli scan` and
// `hailortcli fw-control identify`).
#include "aisrv/engine/hailo8/driver/device_tools.hpp"

#include <fmt/format.h>

#include "aisrv/engine/hailo8/common/digest.hpp"

namespace aisrv::engine::hailo8::driver {
namespace {

using common::HexCase;

bool all_zero(const std::vector<uint8_t>& v) {
  for (uint8_t b : v) {
    if (b) return false;
  }
  return true;
}

}  // namespace

Result<std::vector<ScanEntry>> scan(DriverOpener& opener, const DiscoveryPaths& paths) {
  const auto found = AISRV_TRY(discover(paths));
  std::vector<ScanEntry> entries;
  for (const auto& d : found) {
    if (!d.maybe_hailo8()) continue;
    ScanEntry e;
    e.device = d;
    if (!d.node_exists) {
      e.problem = fmt::format("device node {} is missing", d.dev_path);
    } else if (auto dev = HailoDevice::open(d.dev_path, opener); !dev) {
      e.problem = dev.error().message;
    } else {
      e.driver = dev->driver_version();
      if (auto id = dev->identify()) {
        e.identity = *id;
      } else {
        e.problem = id.error().message;
      }
    }
    entries.push_back(std::move(e));
  }
  if (entries.empty()) return Error{Errc::not_found, no_hailo8_message(found, paths)};
  return entries;
}

Result<IdentifyReport> identify(DriverOpener& opener, const std::optional<std::string>& device,
                                const DiscoveryPaths& paths) {
  std::string path;
  if (device && !device->empty()) {
    path = *device;
  } else {
    const auto found = AISRV_TRY(discover(paths));
    for (const auto& d : found) {
      if (d.maybe_hailo8() && d.node_exists) {
        path = d.dev_path;
        break;
      }
    }
    if (path.empty()) return Error{Errc::not_found, no_hailo8_message(found, paths)};
  }
  auto dev = HailoDevice::open(path, opener);
  if (!dev) {
    if (dev.error().code == Errc::not_found) {
      return make_error(Errc::not_found, "no Hailo-8 device at {} ({})", path, dev.error().message);
    }
    return dev.error();
  }
  IdentifyReport r;
  r.path = path;
  r.driver = dev->driver_version();
  r.abi = dev->abi();
  r.properties = dev->properties();
  r.identity = AISRV_TRY(dev->identify());
  if (auto info = dev->device_information()) {
    r.information = *info;
  } else {
    r.information_problem = info.error().message;
  }
  return r;
}

std::string format_scan(const std::vector<ScanEntry>& entries) {
  std::string out = "Hailo devices:\n";
  for (const auto& e : entries) {
    out += fmt::format("[-] {}", e.device.dev_path);
    if (e.device.board_location) out += fmt::format("  PCI {}", *e.device.board_location);
    if (e.device.device_id) out += fmt::format("  id {}", *e.device.device_id);
    if (e.driver) out += fmt::format("  driver {}", e.driver->str());
    if (e.identity) {
      out += fmt::format("  {}  board '{}'  firmware {}", architecture_name(e.identity->device_architecture),
                         e.identity->board_name, e.identity->firmware.str());
      if (!e.identity->serial_number.empty()) out += fmt::format("  serial {}", e.identity->serial_number);
    }
    out += "\n";
    if (!e.problem.empty()) out += fmt::format("    not identified: {}\n", e.problem);
    for (const auto& note : e.device.notes) out += fmt::format("    note: {}\n", note);
  }
  return out;
}

std::string format_identify(const IdentifyReport& r) {
  const auto& id = r.identity;
  std::string out = "Identifying board\n";
  out += fmt::format("Device: {}\n", r.path);
  out += fmt::format("Driver Version: {} (ioctl layout {})\n", r.driver.str(), driver_abi_name(r.abi));
  out += fmt::format("Control Protocol Version: {}\n", id.protocol_version);
  out += fmt::format("Firmware Version: {}\n", id.firmware.str());
  out += fmt::format("Logger Version: {}\n", id.logger_version);
  out += fmt::format("Board Name: {}\n", id.board_name);
  out += fmt::format("Device Architecture: {}\n", architecture_name(id.device_architecture));
  if (!id.serial_number.empty()) out += fmt::format("Serial Number: {}\n", id.serial_number);
  if (!id.part_number.empty()) out += fmt::format("Part Number: {}\n", id.part_number);
  if (!id.product_name.empty()) out += fmt::format("Product Name: {}\n", id.product_name);
  if (r.information) {
    const auto& info = *r.information;
    out += fmt::format("Boot source: {}\n", info.boot_source_name());
    out += fmt::format("Neural Network Core Clock Rate: {}MHz\n", info.neural_network_core_clock_rate / 1000000);
    if (info.supported_features) out += fmt::format("Device supported features: {}\n", info.supported_features_text());
    if (!all_zero(info.eth_mac_address)) out += fmt::format("MAC Address: {}\n", common::hex(info.eth_mac_address, HexCase::upper, ":"));
    if (!all_zero(info.unit_level_tracking_id)) {
      out += fmt::format("ULT ID: {}\n", common::hex(info.unit_level_tracking_id, HexCase::upper));
    }
  } else if (!r.information_problem.empty()) {
    out += fmt::format("Device information: unavailable ({})\n", r.information_problem);
  }
  out += fmt::format("Descriptor page size: {} max, {} DMA engine(s), buffers allocated by {}\n",
                     r.properties.desc_max_page_size, r.properties.dma_engines_count,
                     r.properties.allocation_mode == 1 ? "the driver" : "user space");
  return out;
}

}  // namespace aisrv::engine::hailo8::driver
