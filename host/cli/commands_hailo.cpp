// aisrv CLI — Hailo-8 device commands, run locally through our hailo_pci driver layer (no server involved):
//   aisrv hailo scan                         list Hailo-8 devices (path, PCI address, driver, firmware, board)
//   aisrv hailo identify [--device PATH]     firmware version, architecture, board name, serial, part, product
// Exit codes (kHailoExitCodes, shown by --help; docs/cli.md): 0 a device identified; 3 no Hailo-8 device found, or none
// answered (the message says where it looked and why); 2 usage. The places looked in can be moved with
// AISRV_HAILO_SYSFS_CLASS and AISRV_HAILO_DEV_DIR (for tests and unusual setups).
#include <fmt/format.h>

#include <cstdlib>

#include "aisrv/engine/hailo8/driver/device_tools.hpp"
#include "cli_context.hpp"

namespace aisrv::cli {

namespace {

namespace hd = aisrv::engine::hailo8::driver;

hd::DiscoveryPaths discovery_paths() {
  hd::DiscoveryPaths p;
  if (const char* v = std::getenv("AISRV_HAILO_SYSFS_CLASS"); v && *v) p.sysfs_class = v;
  if (const char* v = std::getenv("AISRV_HAILO_DEV_DIR"); v && *v) p.dev_dir = v;
  return p;
}

nlohmann::json identity_json(const hd::DeviceIdentity& id) {
  return {{"protocol_version", id.protocol_version},
          {"firmware_version", fmt::format("{}.{}.{}", id.firmware.major, id.firmware.minor, id.firmware.revision)},
          {"firmware_release", id.firmware.release},
          {"logger_version", id.logger_version},
          {"board_name", id.board_name},
          {"architecture", std::string(hd::architecture_name(id.device_architecture))},
          {"serial_number", id.serial_number},
          {"part_number", id.part_number},
          {"product_name", id.product_name}};
}

nlohmann::json scan_json(const std::vector<hd::ScanEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : entries) {
    nlohmann::json j{{"path", e.device.dev_path}, {"name", e.device.name}};
    if (e.device.board_location) j["board_location"] = *e.device.board_location;
    if (e.device.device_id) j["device_id"] = *e.device.device_id;
    if (e.driver) j["driver_version"] = e.driver->str();
    if (e.identity) j["identity"] = identity_json(*e.identity);
    if (!e.problem.empty()) j["problem"] = e.problem;
    if (!e.device.notes.empty()) j["notes"] = e.device.notes;
    list.push_back(std::move(j));
  }
  return {{"devices", list}};
}

// Both subcommands' exit codes, as their --help prints them (the CLI's general table, applied to a local device).
constexpr const char* kHailoExitCodes =
    "Exit codes: 0 a Hailo-8 device was identified; 3 no Hailo-8 device was found, or none answered (the message "
    "says where it looked and why); 2 usage.";

}  // namespace

void add_hailo_commands(CLI::App& app, CliContext& ctx) {
  auto* hailo = app.add_subcommand("hailo", "Hailo-8 devices on this machine (local, through the hailo_pci driver)");
  hailo->require_subcommand(1);

  auto* scan = hailo->add_subcommand("scan", "List the Hailo-8 devices and identify each");
  scan->footer(kHailoExitCodes);
  scan->callback([&ctx] {
    ctx.run([&]() -> Status {
      hd::LinuxDriverOpener opener;
      const auto entries = AISRV_TRY(hd::scan(opener, discovery_paths()));
      if (ctx.options.json) {
        ctx.print_json(scan_json(entries));
      } else {
        fmt::print("{}", hd::format_scan(entries));
      }
      for (const auto& e : entries) {
        if (e.identity) return ok();
      }
      return make_error(Errc::io_error, "no Hailo-8 device could be identified ({})", entries.front().problem);
    });
  });

  auto device = std::make_shared<std::string>();
  auto* identify = hailo->add_subcommand("identify", "Firmware version, architecture, board name and serial of a device");
  identify->footer(kHailoExitCodes);
  identify->add_option("-d,--device", *device, "Device node (default: the first Hailo-8 found), e.g. /dev/hailo0");
  identify->callback([&ctx, device] {
    ctx.run([&]() -> Status {
      hd::LinuxDriverOpener opener;
      const auto report =
          AISRV_TRY(hd::identify(opener, device->empty() ? std::nullopt : std::optional(*device), discovery_paths()));
      if (ctx.options.json) {
        nlohmann::json j{{"path", report.path},
                         {"driver_version", report.driver.str()},
                         {"identity", identity_json(report.identity)}};
        if (report.information) {
          j["core_clock_hz"] = report.information->neural_network_core_clock_rate;
          j["boot_source"] = std::string(report.information->boot_source_name());
          j["supported_features"] = report.information->supported_features_text();
        }
        ctx.print_json(j);
      } else {
        fmt::print("{}", hd::format_identify(report));
      }
      return ok();
    });
  });
}

}  // namespace aisrv::cli
