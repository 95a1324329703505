// aisrv CLI — HEF commands (local, no server): `aisrv hef info FILE|DIR [--streams] [--json]` prints what
// `hailortcli parse-hef` of HailoRT 4.23 prints (docs/engine-hailo8.md), or the reader's JSON. Exit 0 when every
// file parsed, 1 when one did not (the reason goes to stderr), 2 for usage errors.
#include <iostream>

#include "aisrv/engine/hailo8/hef/describe.hpp"
#include "cli_context.hpp"

namespace aisrv::cli {

void add_hef_commands(CLI::App& app, CliContext& ctx) {
  auto* hef = app.add_subcommand("hef", "Inspect Hailo HEF files locally (no server needed)");
  hef->require_subcommand(1);
  struct InfoArgs {
    std::string path;
    bool streams = false;
  };
  auto args = std::make_shared<InfoArgs>();
  auto* info = hef->add_subcommand(
      "info", "Describe a HEF file, or every *.hef in a directory, like `hailortcli parse-hef` (HailoRT 4.23)");
  info->add_option("PATH", args->path, "HEF file or directory")->required();
  info->add_flag("--streams", args->streams, "Also list the device-side streams (hailortcli --parse-streams)");
  info->callback([&ctx, args] {
    ctx.run([&]() -> Status {
      engine::hailo8::hef::DescribeOptions o;
      o.streams = args->streams;
      auto d = engine::hailo8::hef::describe_path(args->path, o);
      if (!d) return Error{Errc::model_error, d.error().message};  // names the path
      if (ctx.options.json) {
        std::cout << engine::hailo8::hef::dump_json(d->json) << std::endl;
      } else {
        std::cout << d->text << std::flush;
      }
      for (const auto& e : d->errors) std::cerr << "aisrv: " << e << std::endl;
      if (!d->errors.empty()) ctx.set_exit_code(kServerError);
      return ok();
    });
  });
}

}  // namespace aisrv::cli
