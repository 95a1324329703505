// aisrv tests — a server process for integration tests: serves exactly like aisrvd (daemon/serve.cpp) but with the
// test-double backend on every engine, so transports, CLI and client can be tested without a real engine.
//   aisrv_test_server --listen unix:/tmp/x.sock [--listen tcp:0] [--usb-ffs DIR] [--engines 2] [--chain 0:1]
//                     [--flash IMAGE [--boot N]...]   (model store as aisrvd --flash; small new images: 4M, 64K blocks)
//                     [--spi sim:/tmp/spi.sock [--spi-frame N] [--spi-fixed] [--spi-timeout MS]]
//                     [--delay-us N]   (per layer of every test model, on top of the model's own)
//                     and every many-clients option of aisrvd (--token-file, --admin-group, --idle-timeout, ...)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "aisrv/flash/open.hpp"
#include "daemon_config.hpp"
#include "serve.hpp"
#include "test_backend.hpp"

int main(int argc, char** argv) {
  using namespace aisrv;
  std::vector<std::string> listen, chain_args;
  unsigned engines = 2;
  std::string max_payload = std::to_string(AISRV_MAX_PAYLOAD);
  std::string usb_ffs;
  std::vector<std::string> spi;
  unsigned spi_frame = AISRV_SPI_DEFAULT_FRAME, spi_timeout_ms = 5000;
  bool spi_fixed = false;
  CLI::App app{"aisrv test server (test-double backends)"};
  app.add_option("-l,--listen", listen);
  app.add_option("--usb-ffs", usb_ffs, "Serve USB on this FunctionFS mount");
  app.add_option("--engines", engines)->check(CLI::Range(1u, AISRV_MAX_ENGINES));
  app.add_option("--chain", chain_args);
  app.add_option("--max-payload", max_payload);
  std::string flash_spec;
  std::vector<uint32_t> boot;
  app.add_option("--flash", flash_spec);
  app.add_option("--boot", boot);
  app.add_option("--spi", spi);
  app.add_option("--spi-frame", spi_frame)->check(CLI::Range(AISRV_SPI_MIN_FRAME, AISRV_SPI_MAX_FRAME));
  app.add_flag("--spi-fixed", spi_fixed);
  app.add_option("--spi-timeout", spi_timeout_ms)->check(CLI::Range(1u, 3600000u));
  daemon::ClientOptions clients;
  daemon::add_client_options(app, clients);
  size_t io_threads = 2;
  app.add_option("--io-threads", io_threads);
  std::vector<std::string> sensor_args;
  app.add_option("--sensor", sensor_args, "N=PATH: raw frames for engine N's START_ACQUIRE_* (as aisrvd)");
  std::string metrics;
  double metrics_timeout_s = 10;
  app.add_option("--metrics", metrics, "tcp:HOST:PORT: /metrics, /healthz, /readyz (as aisrvd)");
  app.add_option("--metrics-timeout", metrics_timeout_s);
  CLI11_PARSE(app, argc, argv);
  if (listen.empty() && usb_ffs.empty() && spi.empty()) {
    std::fprintf(stderr, "aisrv_test_server: give --listen, --usb-ffs and/or --spi\n");
    return 2;
  }

  daemon::block_termination_signals();
  auto logger = spdlog::stderr_color_mt("test-server");
  logger->set_level(spdlog::level::info);
  auto chains = daemon::parse_chain_args(chain_args);
  auto limit = engine::parse_size(max_payload);
  if (!chains || !limit) return 2;
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  for (unsigned i = 0; i < engines; ++i) backends.push_back(std::make_unique<test::TestBackend>());
  daemon::ServeOptions options;
  options.socket.io_threads = io_threads;
  if (auto st = daemon::apply_client_options(clients, options); !st) {
    logger->error("{}", st.error().message);
    return 2;
  }
  for (const auto& note : options.notes) logger->warn("{}", note);
  options.listen = listen;
  options.usb_ffs = usb_ffs;
  options.chains = *chains;
  options.max_payload = static_cast<uint32_t>(*limit);
  flash::OpenedStore store;
  if (!flash_spec.empty()) {
    flash::OpenOptions fo;
    fo.create = true;
    fo.format_blank = true;
    fo.create_geometry = {4u << 20, 64u << 10, 1};
    fo.format.clients = engines;
    auto opened = flash::open_store(flash_spec, fo);
    if (!opened) {
      logger->error("--flash {}: {}", flash_spec, opened.error().message);
      return 1;
    }
    store = std::move(*opened);
  }
  options.store = store.store.get();
  options.boot = boot;
  options.spi = spi;
  options.spi_frame = static_cast<uint16_t>(spi_frame);
  options.spi_fixed = spi_fixed;
  options.spi_timeout_ms = spi_timeout_ms;
  auto sensors = daemon::parse_engine_map(sensor_args, "--sensor", "0=/run/frames.raw");
  if (!sensors) return 2;
  options.sensors = *sensors;
  options.metrics = metrics;
  options.metrics_http.timeout = std::chrono::milliseconds(static_cast<int64_t>(metrics_timeout_s * 1000));
  return daemon::serve(options, std::move(backends), logger);
}
