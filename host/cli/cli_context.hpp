// aisrv CLI — state shared by every subcommand: global options, the lazily opened client, output in text or JSON,
// and the exit-code policy (0 ok, 1 the server answered an error, 2 usage, 3 cannot connect / link failure).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "aisrv/client/client.hpp"

namespace aisrv::cli {

enum ExitCode { kOk = 0, kServerError = 1, kUsage = 2, kNoConnection = 3 };
int exit_code_for(Errc code);

struct GlobalOptions {
  std::string connect;  // --connect, else $AISRV_CONNECT, else the default socket
  uint32_t engine = 0;  // --engine
  bool json = false;    // --json
  unsigned timeout_ms = 10000;
  std::string token_file;  // --token-file, else $AISRV_TOKEN_FILE: AUTH after connecting
};

class CliContext {
 public:
  GlobalOptions options;

  // The connected client (connects and checks the version on first use).
  Result<client::Client*> client();
  // Another connection to the same server (a session of its own), e.g. for several benchmark clients.
  Result<client::Client> connect() const;
  // Runs a subcommand body; an error is printed (stderr, or a JSON object with --json) and sets the exit code.
  void run(const std::function<Status()>& body);
  void print_json(const nlohmann::json& j) const;
  int exit_code() const { return exit_code_; }
  void set_exit_code(int code) { exit_code_ = code; }
  // The server talked to: --connect, else $AISRV_CONNECT, else the default socket (after a connection: the system
  // socket when the default one did not exist).
  std::string target() const;
  // The system-wide socket of the packaged aisrvd.socket ($AISRV_SYSTEM_SOCKET overrides it): where a user without a
  // daemon of their own is served.
  static std::string system_target();

 private:
  std::optional<client::Client> client_;
  mutable std::string used_target_;  // set when a connection fell back to the system socket
  int exit_code_ = kOk;
};

// Command groups (one file each). Each adds its subcommands to `app`.
void add_basic_commands(CLI::App& app, CliContext& ctx);
void add_model_commands(CLI::App& app, CliContext& ctx);
void add_inference_commands(CLI::App& app, CliContext& ctx);
void add_hailo_commands(CLI::App& app, CliContext& ctx);  // local Hailo-8 device tools
void add_hef_commands(CLI::App& app, CliContext& ctx);  // local HEF inspection (engine/hailo8/hef)
void add_scan_commands(CLI::App& app, CliContext& ctx);
void add_flash_commands(CLI::App& app, CliContext& ctx);
void add_flash_image_commands(CLI::App& app, CliContext& ctx);
void add_bench_commands(CLI::App& app, CliContext& ctx);    // bench: throughput and latency of a model
void add_monitor_commands(CLI::App& app, CliContext& ctx);  // monitor: live engine counters
void add_sensor_commands(CLI::App& app, CliContext& ctx);   // acquire, gpio, i2c

}  // namespace aisrv::cli
