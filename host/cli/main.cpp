// aisrv CLI — entry point: global options, the subcommand groups, exit codes.
//   0 ok · 1 the server answered an error · 2 usage · 3 cannot connect (or the link failed)
#include <CLI/CLI.hpp>

#include <iostream>
#include <string_view>

#include "aisrv/build_info.hpp"
#include "aisrv/completion/bash_completion.hpp"
#include "cli_context.hpp"

int main(int argc, char** argv) {
  using namespace aisrv::cli;
  CliContext ctx;
  CLI::App app{"aisrv — host tool for the aisrv AI server (protocol and CLI reference: docs/protocol.md, docs/cli.md)",
               "aisrv"};
  app.set_version_flag("--version", "aisrv " AISRV_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("-c,--connect", ctx.options.connect,
                 "Server to talk to: unix:PATH, tcp:HOST:PORT, tcp:PORT, usb[:VID:PID[:SERIAL]], "
                 "spi:/dev/spidevB.C[:HZ] (spidev as SPI "
                 "master) or spi-sim:PATH (default: $AISRV_CONNECT, else the default socket of aisrvd)");
  app.add_option("-e,--engine", ctx.options.engine, "Engine number")->check(CLI::Range(0u, 0xFFFFFFFEu));
  app.add_flag("--json", ctx.options.json, "Machine-readable output (one JSON object)");
  app.add_option("--timeout", ctx.options.timeout_ms, "Per-command timeout in milliseconds")
      ->check(CLI::Range(1u, 3600000u));
  app.add_option("--token-file", ctx.options.token_file,
                 "File holding the server's token, sent with AUTH after connecting (TCP to an aisrvd started with "
                 "--token-file; default: $AISRV_TOKEN_FILE)");
  app.footer("Exit codes: 0 ok, 1 the server answered an error, 2 usage, 3 cannot connect.");

  add_basic_commands(app, ctx);
  add_model_commands(app, ctx);
  add_inference_commands(app, ctx);
  add_hailo_commands(app, ctx);
  add_hef_commands(app, ctx);
  add_scan_commands(app, ctx);
  add_flash_commands(app, ctx);
  add_flash_image_commands(app, ctx);
  add_bench_commands(app, ctx);
  add_monitor_commands(app, ctx);
  add_sensor_commands(app, ctx);
  app.add_flag("--bash-completion")->description("Print a bash completion script for aisrv and exit (installed with the package)");
  if (argc == 2 && std::string_view(argv[1]) == "--bash-completion") {
    std::cout << bash_completion(app, "aisrv");
    return kOk;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kOk : kUsage;
  }
  return ctx.exit_code();
}
