// aisrvd — the AI server daemon: parses the command line, builds the engines from --engine, and serves
// (daemon/serve.cpp) until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>


#include <iostream>
#include <string_view>

#include "aisrv/build_info.hpp"
#include "aisrv/completion/bash_completion.hpp"
#include "aisrv/engine/builtin.hpp"
#include "aisrv/flash/open.hpp"
#include "aisrv/protocol/endpoint.hpp"
#include "aisrv/protocol/limits.h"
#include "daemon_config.hpp"
#include "serve.hpp"
#include "systemd.hpp"

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

  std::vector<std::string> listen_args, engine_args, chain_args, sensor_args, sensor_i2c_args, gpio_args;
  unsigned stream_fps = 10;
  std::string log_level = "info";
  std::string usb_ffs;
  std::string max_payload_text = std::to_string(AISRV_MAX_PAYLOAD);
  size_t io_threads = 2;
  std::string flash_spec, flash_size_text = "16M", flash_block_text;
  unsigned flash_clients = AISRV_MAX_ENGINES;
  std::vector<uint32_t> boot;
  std::vector<std::string> spi_args;
  std::vector<std::string> frigate_args;
  unsigned spi_frame = AISRV_SPI_DEFAULT_FRAME, spi_mode = 0, spi_timeout_ms = 5000;
  bool spi_fixed = false;
  CLI::App app{"aisrvd — the aisrv AI server: serves the aisrv protocol (docs/protocol.md) on sockets, USB and SPI "
               "to inference engines",
               "aisrvd"};
  app.set_version_flag("--version", "aisrvd " AISRV_VERSION_STRING " (protocol " +
                                        std::to_string(AISRV_PROTOCOL_MAJOR) + "." +
                                        std::to_string(AISRV_PROTOCOL_MINOR) + ")");
  // Every option can also be set in a file, with the option's long name as the key (`engine = ["0=hailo8"]`,
  // `admin-group = "aisrv-admins"`); options on the command line win.
  app.set_config("--config", daemon::kDefaultConfigFile,
                 "Read options from this file (TOML/INI: one `option-name = value` per line; repeatable options as "
                 "lists); the command line wins over it. Default: " + std::string(daemon::kDefaultConfigFile) +
                     " when it exists");
  app.allow_config_extras(CLI::config_extras_mode::error);  // a misspelt key is an error, never silently ignored
  app.add_option("-l,--listen", listen_args,
                 "Listen on unix:PATH, tcp:PORT (loopback) or tcp:HOST:PORT (loopback unless --allow-remote) "
                 "(repeatable; default " +
                     protocol::default_socket_target() + ", in a directory only this user can write)");
  app.add_option("--usb-ffs", usb_ffs,
                 "Serve USB on the FunctionFS mount DIR (set it up with tools/usb-gadget up; bind the gadget after "
                 "aisrvd started: tools/usb-gadget bind). Without --listen, no socket is opened then");
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
                 "N=SOURCE gives engine N a frame source for START_ACQUIRE_*: v4l2:/dev/videoX[:WxH[:FOURCC]] (a camera; "
                 "libcamera:[CAMERA][:WxH[:FOURCC]] for a camera libcamera drives, e.g. a Raspberry Pi CSI camera; "
                 "frames converted, cropped, resized and quantized for input 0; docs/sensors-gpio.md) or PATH (raw frames of "
                 "input 0's size from a file, looped, a FIFO or a character device) (repeatable)");
  app.add_option("--sensor-i2c", sensor_i2c_args,
                 "N=/dev/i2c-M: the I2C bus of engine N's sensor, written by START_ACQUIRE_SET_I2C through i2c-dev "
                 "(repeatable)");
  app.add_option("--gpio", gpio_args,
                 "N=CHIP:LINE[,LINE...][:idle=low|high|0,1,...]: output GPIO lines of engine N, driven from its "
                 "output tensor 0 after every inference (SET_OUTPUT_GPIO_*; docs/sensors-gpio.md). CHIP is gpiochipK, "
                 "/dev/gpiochipK or a chip label; the lines are requested as outputs named 'aisrvd' at start-up, held "
                 "while a model is loaded, and rest at their idle level (default low) before the first inference, "
                 "while disabled, at unload and at shutdown (repeatable)");
  app.add_option("--stream-fps", stream_fps, "Frames per second of START_ACQUIRE_STREAM")->check(CLI::Range(1u, 1000u));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--max-payload", max_payload_text, "Largest request payload accepted (e.g. 16M; at most 64M)");
  app.add_option("--io-threads", io_threads,
                 "Socket event-loop threads (default 2: a large transfer on one connection never holds the others' "
                 "answers)")
      ->check(CLI::Range(1, 64));
  app.add_option("--flash", flash_spec,
                 "Model store: an image file (created and formatted when missing or blank) or mtd:/dev/mtdN (formatted "
                 "only when erased); engine N's stored model is client N (docs/flash-format.md)");
  app.add_option("--flash-size", flash_size_text, "Size of a new flash image (default 16M)");
  app.add_option("--flash-erase-block", flash_block_text,
                 "Erase-block size of a new image (default 64K) or of an existing one (default: from its superblock)");
  app.add_option("--flash-clients", flash_clients, "Clients (engine numbers) of a newly formatted store")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--boot", boot, "Engine N loads its stored model from flash at start (repeatable)");
  app.add_option("--frigate", frigate_args,
                 "ENDPOINT=ENGINE[,option...]: serve Frigate's `zmq` detector protocol on ENDPOINT (ipc://PATH, or "
                 "tcp://HOST:PORT: loopback unless --allow-remote) with engine ENGINE, e.g. "
                 "ipc:///tmp/cache/zmq_detector=0. Options: accept-models (Frigate may write its model file into the "
                 "store and load it; default: refused), threshold=F (lowest score replied, default 0.4), mean=M[:M:M] "
                 "and std=S[:S:S] (float or quantized inputs: (pixel - mean) / std), peers=N (connections with a "
                 "session, default 32), idle=SECONDS (default 120), max-message=SIZE (largest message part, default "
                 "32M) (repeatable; docs/frigate.md)");
  std::string metrics_endpoint;
  size_t metrics_max_connections = 16;
  double metrics_timeout_s = 10;
  size_t metrics_max_request = 8192;
  app.add_option("--metrics", metrics_endpoint,
                 "Serve Prometheus metrics (/metrics) and the health probes /healthz and /readyz over HTTP on "
                 "tcp:PORT (loopback) or tcp:HOST:PORT (loopback unless --allow-remote), e.g. tcp:127.0.0.1:9464 "
                 "(docs/metrics.md)");
  app.add_option("--metrics-max-connections", metrics_max_connections,
                 "HTTP connections the metrics listener keeps open at once; more are closed (default 16)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--metrics-timeout", metrics_timeout_s,
                 "Seconds an HTTP peer of the metrics listener has to send a whole request (and to take the answer); "
                 "also the idle time after which a kept-alive connection is closed (default 10)")
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--metrics-max-request", metrics_max_request,
                 "Bytes of an HTTP request's line and headers (and, separately, of a body, which is ignored) the "
                 "metrics listener reads; a larger request is answered 431 and closed (default 8192)")
      ->check(CLI::Range(256, 1 << 20));
  daemon::ClientOptions clients;
  daemon::add_client_options(app, clients);
  app.add_flag("--bash-completion")->description("Print a bash completion script for aisrvd and exit (installed with the package)");
  if (argc == 2 && std::string_view(argv[1]) == "--bash-completion") {
    std::cout << cli::bash_completion(app, "aisrvd");
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  daemon::block_termination_signals();
  auto logger = daemon::make_logger("aisrvd");
  logger->set_level(spdlog::level::from_str(log_level));
  auto fail = [&](int code, const Error& e) {
    logger->error("{}", e.message);
    return code;
  };

  auto specs = daemon::parse_engine_args(engine_args.empty() ? std::vector<std::string>{"0=cpu"} : engine_args);
  if (!specs) return fail(kExitUsage, specs.error());
  auto chains = daemon::parse_chain_args(chain_args);
  if (!chains) return fail(kExitUsage, chains.error());
  auto sensors = daemon::parse_engine_map(sensor_args, "--sensor", "0=v4l2:/dev/video0");
  if (!sensors) return fail(kExitUsage, sensors.error());
  auto sensor_i2c = daemon::parse_engine_map(sensor_i2c_args, "--sensor-i2c", "0=/dev/i2c-1");
  if (!sensor_i2c) return fail(kExitUsage, sensor_i2c.error());
  auto gpio = daemon::parse_engine_map(gpio_args, "--gpio", "0=gpiochip0:17,27");
  if (!gpio) return fail(kExitUsage, gpio.error());
  auto max_payload = engine::parse_size(max_payload_text);
  if (!max_payload) return fail(kExitUsage, max_payload.error());
  if (*max_payload == 0 || *max_payload > AISRV_MAX_PAYLOAD)
    return fail(kExitUsage, make_error(Errc::invalid_argument, "--max-payload must be 1..{}", AISRV_MAX_PAYLOAD));

  daemon::ServeOptions serve;
  serve.socket.io_threads = io_threads;
  for (const auto& f : frigate_args) {
    auto config = phy::frigate::parse_endpoint_spec(f, static_cast<uint32_t>(specs->size()), clients.allow_remote);
    if (!config) return fail(kExitUsage, config.error());
    serve.frigate.push_back(std::move(config).value());
  }
  if (auto st = daemon::apply_client_options(clients, serve); !st) return fail(kExitUsage, st.error());
  for (const auto& note : serve.notes) logger->warn("{}", note);

  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  for (size_t i = 0; i < specs->size(); ++i) {
    auto b = registry.create((*specs)[i]);
    if (!b) return fail(kExitUsage, make_error(b.error().code, "engine {}: {}", i, b.error().message));
    logger->info("engine {}: {} ({})", i, (*b)->kind(), (*b)->options());
    backends.push_back(std::move(b).value());
  }

  // The model store lives as long as the server that uses it.
  flash::OpenedStore store;
  if (!flash_spec.empty()) {
    flash::OpenOptions fo;
    fo.create = true;
    fo.format_blank = true;
    fo.format.clients = flash_clients;
    auto size = flash::parse_size(flash_size_text);
    if (!size) return fail(kExitUsage, make_error(Errc::invalid_argument, "--flash-size: {}", size.error().message));
    fo.create_geometry.size = *size;
    if (!flash_block_text.empty()) {
      auto eb = flash::parse_size(flash_block_text);
      if (!eb || *eb > UINT32_MAX)
        return fail(kExitUsage, make_error(Errc::invalid_argument, "--flash-erase-block '{}' is not a size",
                                           flash_block_text));
      fo.create_geometry.erase_block = static_cast<uint32_t>(*eb);
      fo.erase_block = static_cast<uint32_t>(*eb);
    }
    auto opened = flash::open_store(flash_spec, fo);
    if (!opened)
      return fail(opened.error().code == Errc::invalid_argument ? kExitUsage : aisrv::daemon::kExitStartup,
                  make_error(opened.error().code, "--flash {}: {}", flash_spec, opened.error().message));
    store = std::move(*opened);
    logger->info("model store: {} ({}), {} clients{}", store.device->name(),
                 flash::describe(store.device->geometry()), store.store->clients(),
                 store.created ? ", new image" : store.formatted ? ", formatted (was blank)" : "");
    for (const auto& note : store.store->notes()) logger->warn("model store: {}", note);
  } else if (!boot.empty()) {
    return fail(kExitUsage, make_error(Errc::invalid_argument, "--boot needs --flash PATH"));
  }

  serve.store = store.store.get();
  serve.boot = boot;
  serve.listen = listen_args;
  serve.usb_ffs = usb_ffs;
  serve.chains = *chains;
  serve.max_payload = static_cast<uint32_t>(*max_payload);
  serve.spi = spi_args;
  serve.spi_frame = static_cast<uint16_t>(spi_frame);
  serve.spi_fixed = spi_fixed;
  serve.spi_mode = static_cast<uint8_t>(spi_mode);
  serve.spi_timeout_ms = spi_timeout_ms;
  serve.sensors = *sensors;
  serve.sensor_i2c = *sensor_i2c;
  serve.gpio = *gpio;
  serve.stream_fps = stream_fps;
  serve.metrics = metrics_endpoint;
  serve.metrics_http.max_connections = metrics_max_connections;
  serve.metrics_http.timeout = std::chrono::milliseconds(static_cast<int64_t>(metrics_timeout_s * 1000));
  serve.metrics_http.max_request_bytes = metrics_max_request;
  return daemon::serve(serve, std::move(backends), logger);
}
