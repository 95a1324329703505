// aisrvd — the AI server daemon: parses the command line, builds the engines from --engine, and serves
// (daemon/serve.cpp) until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>


#include "aisrv/build_info.hpp"
#include "aisrv/engine/builtin.hpp"
#include "aisrv/protocol/endpoint.hpp"
#include "aisrv/protocol/limits.h"
#include "daemon_config.hpp"
#include "serve.hpp"

namespace {

using aisrv::daemon::kExitUsage;

std::string engine_help(const aisrv::engine::BackendRegistry& registry) {
  std::string s = "Engine N runs KIND with options, e.g. 0=cpu or 0=cpu:kernels=ref,arena=4M (repeatable; engines "
                  "are numbered 0..N-1). Kinds in this build:";
  if (registry.entries().empty()) s += " none";
  for (const auto& e : registry.entries()) s += fmt::format("\n  {}: {}", e.kind, e.description);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace aisrv;
  engine::BackendRegistry registry;
  engine::register_builtin_backends(registry);

  std::vector<std::string> listen_args, engine_args, chain_args, sensor_args;
  unsigned stream_fps = 10;
  std::string log_level = "info";
  std::string max_payload_text = std::to_string(AISRV_MAX_PAYLOAD);
  size_t io_threads = 1;
  std::vector<std::string> spi_args;
  unsigned spi_frame = AISRV_SPI_DEFAULT_FRAME, spi_mode = 0, spi_timeout_ms = 5000;
  bool spi_fixed = false;

  CLI::App app{"aisrvd — the aisrv AI server: serves the aisrv protocol (docs/protocol.md) on sockets, USB and SPI "
               "to inference engines",
               "aisrvd"};
  app.set_version_flag("--version", "aisrvd " AISRV_VERSION_STRING " (protocol " +
                                        std::to_string(AISRV_PROTOCOL_MAJOR) + "." +
                                        std::to_string(AISRV_PROTOCOL_MINOR) + ")");
  app.add_option("-l,--listen", listen_args,
                 "Listen on unix:PATH (mode 0660), tcp:PORT (loopback) or tcp:HOST:PORT (repeatable; default " +
                     protocol::default_socket_target() + ")");
  app.add_option("--spi", spi_args,
                 "Serve the SPI link protocol as slave on sim:PATH (simulated wire over a Unix socket) or "
                 "/dev/spidevB.C (spidev on a controller in slave mode; docs/transport-spi.md) (repeatable)");
  app.add_option("--spi-frame", spi_frame, "Largest SPI transaction in bytes (default 4092)")
      ->check(CLI::Range(AISRV_SPI_MIN_FRAME, AISRV_SPI_MAX_FRAME));
  app.add_flag("--spi-fixed", spi_fixed,
               "Every SPI transaction is exactly --spi-frame bytes (controllers that need the length in advance)");
  app.add_option("--spi-mode", spi_mode, "SPI mode 0..3 (spidev)")->check(CLI::Range(0u, 3u));
  app.add_option("--spi-timeout", spi_timeout_ms,
                 "Milliseconds after which an incomplete SPI transfer is discarded (default 5000)")
      ->check(CLI::Range(1u, 3600000u));
  app.add_option("-e,--engine", engine_args, engine_help(registry));
  app.add_option("--chain", chain_args,
                 "FROM:TO feeds engine FROM's outputs into engine TO's inputs and runs TO after each successful "
                 "inference of FROM (repeatable)");
  app.add_option("--sensor", sensor_args,
                 "N=PATH gives engine N a frame source for START_ACQUIRE_*: raw frames of input 0's size read from a "
                 "file (looped), a FIFO or a character device (repeatable)");
  app.add_option("--stream-fps", stream_fps, "Frames per second of START_ACQUIRE_STREAM")->check(CLI::Range(1u, 1000u));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--max-payload", max_payload_text, "Largest request payload accepted (e.g. 16M; at most 64M)");
  app.add_option("--io-threads", io_threads, "Socket event-loop threads")->check(CLI::Range(1, 64));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  daemon::block_termination_signals();
  auto logger = spdlog::stderr_color_mt("aisrvd");
  logger->set_level(spdlog::level::from_str(log_level));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  auto fail = [&](int code, const Error& e) {
    logger->error("{}", e.message);
    return code;
  };

  auto specs = daemon::parse_engine_args(engine_args.empty() ? std::vector<std::string>{"0=cpu"} : engine_args);
  if (!specs) return fail(kExitUsage, specs.error());
  auto chains = daemon::parse_chain_args(chain_args);
  if (!chains) return fail(kExitUsage, chains.error());
  auto sensors = daemon::parse_sensor_args(sensor_args);
  if (!sensors) return fail(kExitUsage, sensors.error());
  auto max_payload = engine::parse_size(max_payload_text);
  if (!max_payload) return fail(kExitUsage, max_payload.error());
  if (*max_payload == 0 || *max_payload > AISRV_MAX_PAYLOAD)
    return fail(kExitUsage, make_error(Errc::invalid_argument, "--max-payload must be 1..{}", AISRV_MAX_PAYLOAD));

  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  for (size_t i = 0; i < specs->size(); ++i) {
    auto b = registry.create((*specs)[i]);
    if (!b) return fail(kExitUsage, make_error(b.error().code, "engine {}: {}", i, b.error().message));
    logger->info("engine {}: {} ({})", i, (*b)->kind(), (*b)->options());
    backends.push_back(std::move(b).value());
  }

  daemon::ServeOptions serve;
  serve.listen = listen_args;
  serve.chains = *chains;
  serve.max_payload = static_cast<uint32_t>(*max_payload);
  serve.io_threads = io_threads;
  serve.spi = spi_args;
  serve.spi_frame = static_cast<uint16_t>(spi_frame);
  serve.spi_fixed = spi_fixed;
  serve.spi_mode = static_cast<uint8_t>(spi_mode);
  serve.spi_timeout_ms = spi_timeout_ms;
  serve.sensors = *sensors;
  serve.stream_fps = stream_fps;
  return daemon::serve(serve, std::move(backends), logger);
}
