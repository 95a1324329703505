// aisrv CLI — `aisrv scan`: attached USB devices that expose an aisrv interface (ids, serial, speed, protocol version).
#include <fmt/format.h>

#include "aisrv/client/usb_transport.hpp"
#include "cli_context.hpp"

namespace aisrv::cli {

void add_scan_commands(CLI::App& app, CliContext& ctx) {
  auto* scan = app.add_subcommand("scan", "List attached USB devices with an aisrv interface and ask each for its "
                                          "protocol version (GET_VERSION)");
  auto no_probe = std::make_shared<bool>(false);
  scan->add_flag("--no-probe", *no_probe, "Only list descriptors; do not open the interface");
  scan->callback([&ctx, no_probe] {
    ctx.run([&]() -> Status {
      auto devices = AISRV_TRY(client::scan_usb(!*no_probe, std::chrono::milliseconds(ctx.options.timeout_ms)));
      if (ctx.options.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& d : devices) {
          nlohmann::json j{{"target", d.target},
                           {"bus", d.bus},
                           {"address", d.address},
                           {"port", d.port_path},
                           {"vendor_id", fmt::format("{:04x}", d.vendor_id)},
                           {"product_id", fmt::format("{:04x}", d.product_id)},
                           {"serial", d.serial},
                           {"manufacturer", d.manufacturer},
                           {"product", d.product},
                           {"speed", d.speed},
                           {"interface", d.interface},
                           {"endpoint_out", d.endpoint_out},
                           {"endpoint_in", d.endpoint_in},
                           {"max_packet", d.max_packet}};
          if (d.version) {
            j["protocol"] = fmt::format("{}.{}", d.version->major, d.version->minor);
            j["server_version"] = d.version->server_version;
            j["engines"] = d.version->engines;
            j["max_payload"] = d.version->max_payload;
            j["capabilities"] = d.version->capabilities;
          } else if (d.probed) {
            j["probe_error"] = d.probe_error;
          }
          arr.push_back(std::move(j));
        }
        ctx.print_json({{"devices", arr}});
        return ok();
      }
      if (devices.empty()) {
        fmt::print("no aisrv USB device attached\n");
        return ok();
      }
      for (const auto& d : devices) {
        std::string proto = "not probed";
        if (d.version)
          proto = fmt::format("protocol {}.{}, {}, {} engine{}", d.version->major, d.version->minor,
                              d.version->server_version, d.version->engines, d.version->engines == 1 ? "" : "s");
        else if (d.probed)
          proto = "probe failed: " + d.probe_error;
        fmt::print("{}  bus {:03d} address {:03d} port {}  {} speed (max packet {})  '{}' '{}' serial '{}'  {}\n",
                   d.target, d.bus, d.address, d.port_path, d.speed, d.max_packet, d.manufacturer, d.product,
                   d.serial, proto);
      }
      return ok();
    });
  });
}

}  // namespace aisrv::cli
