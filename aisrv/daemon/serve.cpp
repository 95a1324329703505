// aisrvd — serving loop and orderly shutdown.
#include "serve.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <future>
#include <thread>

#include "aisrv/flash/store.hpp"
#include "frigate_metrics.hpp"
#include "metrics_page.hpp"
#include "probe_http_server.hpp"
#include "systemd.hpp"
#include "aisrv/build_info.hpp"
#include "aisrv/phy/socket_server.hpp"
#include "aisrv/phy/usb_function.hpp"
#include "aisrv/phy/spi_server.hpp"
#include "aisrv/phy/frigate_endpoint.hpp"
#include "aisrv/protocol/endpoint.hpp"
#include "aisrv/sensors/frame_source.hpp"
#include "aisrv/sensors/libcamera_frame_source.hpp"
#include "aisrv/server.hpp"

namespace aisrv::daemon {

namespace {
sigset_t termination_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}
}  // namespace

void block_termination_signals() {
  const sigset_t s = termination_signals();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

namespace {

// Waits for SIGINT/SIGTERM. Under a systemd watchdog (WatchdogSec=) it wakes every half interval and sends WATCHDOG=1
// when the last liveness probe came back: a no-op job queued on every engine and the server's own queue
// (Server::probe_workers), so a worker pool or a backend that hangs stops the pings and systemd restarts the daemon.
int wait_for_termination(server::Server& server, const std::shared_ptr<spdlog::logger>& logger) {
  const sigset_t s = termination_signals();
  const auto interval = watchdog_interval();
  if (!interval) {
    int sig = 0;
    sigwait(&s, &sig);
    return sig;
  }
  const auto period = std::max<std::chrono::microseconds>(*interval / 2, std::chrono::microseconds(1000));
  logger->info("systemd watchdog: WATCHDOG=1 every {} ms while the engines' queues answer", period.count() / 1000);
  enum : int { pending, answered, refused };
  auto probe = std::make_shared<std::atomic<int>>(answered);
  bool late = false;
  for (;;) {
    if (const int state = probe->load(); state == answered) {
      notify_watchdog();
      if (late) logger->info("systemd watchdog: the engines' queues answer again; pinging");
      late = false;
      probe->store(pending);
      server.probe_workers([probe](bool ran) { probe->store(ran ? answered : refused); });
    } else if (!late) {
      late = true;
      logger->error("systemd watchdog: not pinged: an engine's queue has not answered the liveness probe within {} "
                    "ms (a backend stuck in an inference?); systemd restarts aisrvd when this lasts for WatchdogSec",
                    period.count() / 1000);
    }
    timespec ts{static_cast<time_t>(period.count() / 1000000), static_cast<long>(period.count() % 1000000) * 1000};
    const int sig = sigtimedwait(&s, nullptr, &ts);
    if (sig > 0) return sig;
  }
}

// SIGTERM/SIGINT: stop taking clients, answer what is in flight (queued requests are answered ERROR_CANCELLED at
// once), cancel inferences still running at the deadline, close the transports, sync the store. A shutdown that
// cannot finish (a backend that ignores cancel) ends the process with kExitShutdownTimeout after a grace period.
int shut_down(const char* signal, const ServeOptions& options, server::Server& server, phy::SocketServer& sockets,
              phy::UsbFunctionServer* usb, std::vector<std::unique_ptr<phy::spi::SpiServer>>& spi,
              std::vector<std::unique_ptr<phy::frigate::FrigateEndpoint>>& frigate,
              const std::shared_ptr<spdlog::logger>& logger) {
  const auto timeout = options.shutdown_timeout;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto grace = std::min<std::chrono::milliseconds>(timeout, std::chrono::milliseconds(5000));
  logger->info("{} received: shutting down; requests in flight get up to {} ms", signal, timeout.count());
  notify_stopping();
  // Leaves without waiting when the orderly steps below cannot finish (the store is power-cut safe).
  std::promise<void> finished;
  std::thread watchdog([fut = finished.get_future(), deadline, grace, logger]() mutable {
    if (fut.wait_until(deadline + 2 * grace) == std::future_status::ready) return;
    logger->error("shutdown did not finish in time; exiting without waiting for the engines");
    logger->flush();
    std::_Exit(kExitShutdownTimeout);
  });
  sockets.stop_accepting();
  server.begin_shutdown();
  bool clean = sockets.drain(deadline);
  if (!clean || !server.wait_idle(deadline)) {
    clean = false;
    logger->warn("requests still running after {} ms: cancelling the running inferences", timeout.count());
    server.cancel_running();
    // Their clients are answered ERROR_CANCELLED before the connections close.
    sockets.drain(std::chrono::steady_clock::now() + grace);
  }
  if (usb) usb->stop();
  for (auto& port : spi) port->stop();
  for (auto& endpoint : frigate) endpoint->stop();
  sockets.stop();
  if (!server.wait_idle(std::chrono::steady_clock::now() + grace)) clean = false;
  if (options.store) {
    if (auto st = options.store->device().sync(); !st) logger->error("model store: sync failed: {}", st.error().message);
  }
  finished.set_value();
  watchdog.join();
  logger->info("stopped{}", clean ? "" : " (in-flight work was cancelled at the shutdown deadline)");
  return 0;
}

}  // namespace

int serve(const ServeOptions& options, std::vector<std::unique_ptr<engine::InferenceBackend>> backends,
          std::shared_ptr<spdlog::logger> logger) {
  server::ServerOptions so;
  so.max_payload = options.max_payload;
  so.chains = options.chains;
  so.logger = logger;
  // The USB framing's CRC trailer and one-transfer SETs.
  if (!options.usb_ffs.empty()) so.extra_capabilities |= AISRV_CAP_CRC32 | AISRV_CAP_USB_ONE_TRANSFER;
  so.store = options.store;
  so.access = options.access;
  so.session = options.session;
  for (const auto& [e, bus] : options.sensor_i2c) {
    bool has_sensor = false;
    for (const auto& [n, path] : options.sensors) has_sensor = has_sensor || n == e;
    if (!has_sensor) {
      logger->error("--sensor-i2c {}={}: engine {} has no --sensor", e, bus, e);
      return kExitUsage;
    }
  }
  for (const auto& [engine, path] : options.sensors) {
    Result<std::unique_ptr<sensors::FrameSource>> source = make_error(Errc::internal, "no source");
    if (path.rfind("v4l2:", 0) == 0) {
      auto v4l2 = sensors::parse_v4l2_spec(path);
      if (!v4l2) {
        logger->error("--sensor {}={}: {}", engine, path, v4l2.error().message);
        return kExitUsage;
      }
      source = sensors::open_v4l2_frame_source(*v4l2);
    } else if (path.rfind("libcamera:", 0) == 0) {
      auto spec = sensors::parse_libcamera_spec(path);
      if (!spec) {
        logger->error("--sensor {}={}: {}", engine, path, spec.error().message);
        return kExitUsage;
      }
      source = sensors::open_libcamera_frame_source(*spec);
    } else {
      source = sensors::open_raw_frame_source(path);
    }
    if (!source) {
      logger->error("--sensor {}={}: {}", engine, path, source.error().message);
      // A camera that cannot be used is a start-up failure; a bad spec or raw path a usage error (as before).
      const bool camera = path.rfind("v4l2:", 0) == 0 || path.rfind("libcamera:", 0) == 0;
      return camera && source.error().code != Errc::invalid_argument ? kExitStartup : kExitUsage;
    }
    std::unique_ptr<sensors::I2cBus> i2c;
    for (const auto& [e, bus] : options.sensor_i2c) {
      if (e != engine) continue;
      auto opened = sensors::open_i2c_bus(bus);
      if (!opened) {
        logger->error("--sensor-i2c {}={}: {}", e, bus, opened.error().message);
        return kExitStartup;
      }
      i2c = std::move(*opened);
    }
    so.sensors.emplace_back(engine, server::SensorConfig{std::move(source).value(),
                                                         std::chrono::milliseconds(1000 / options.stream_fps),
                                                         std::move(i2c)});
    const auto& added = so.sensors.back().second;
    // A camera that is not plugged in yet does not stop the start: the engine serves, acquisitions answer
    // ERROR_SENSOR saying it is absent, and the first one after it appears opens it (docs/sensors-gpio.md).
    logger->info("engine {}: sensor {}{}{}", engine, added.source->describe(),
                 added.source->present() ? "" : " (absent now; opened at the first acquisition after it appears)",
                 added.i2c ? ", I2C " + added.i2c->describe() : std::string());
  }
  for (const auto& [engine, spec] : options.gpio) {
    auto parsed = sensors::parse_gpio_spec(spec);
    if (!parsed) {
      logger->error("--gpio {}={}: {}", engine, spec, parsed.error().message);
      return kExitUsage;
    }
    // Requested now: a missing chip or line, or one another program holds, stops the start-up.
    auto lines = sensors::open_gpio_lines(*parsed);
    if (!lines) {
      logger->error("--gpio {}={}: {}", engine, spec, lines.error().message);
      return kExitStartup;
    }
    logger->info("engine {}: output GPIO {}", engine, (*lines)->describe());
    so.gpio.emplace_back(engine, std::move(lines).value());
  }
  auto server = server::Server::create(std::move(so), std::move(backends));
  if (!server) {
    logger->error("{}", server.error().message);
    return kExitUsage;
  }
  // --boot: engines load their stored model as SET_MODEL_SECONDARY_FLASH would; a failure is logged (the engine's
  // debug log says why) and the engine serves without a model, so a host can repair it over the protocol.
  auto boot_session = (*server)->open_session(server::Peer::of(server::Trust::process, "internal", "--boot"));
  for (uint32_t n : options.boot) {
    if (n >= (*server)->engine_count()) {
      logger->error("--boot {}: engine {} does not exist (engines 0..{})", n, n, (*server)->engine_count() - 1);
      return kExitUsage;
    }
    if (!options.store) {
      logger->error("--boot {} needs a model store (--flash PATH)", n);
      return kExitUsage;
    }
    protocol::Request req{protocol::Header{static_cast<uint32_t>(protocol::Command::SET_MODEL_SECONDARY_FLASH), n, 0},
                          {}};
    protocol::Response resp;
    (*server)->handle(*boot_session, req, resp);
    if (resp.status == AISRV_STATUS_OKAY) {
      logger->info("engine {}: booted its stored model from flash", n);
    } else {
      // Everyone who uses the engine later needs to know why it has no model: a shared line, not the boot session's.
      const std::string why = boot_session->last_line(n);
      (*server)->engine(n)->log().add(fmt::format("boot from flash failed ({}): {}", protocol::status_names(resp.status), why));
      logger->error("engine {}: boot from flash failed ({}): {}", n, protocol::status_names(resp.status), why);
    }
  }
  (*server)->close_session(*boot_session, "boot done");

  // SPI ports first: their sockets/devices exist before the server announces itself on a socket.
  std::vector<std::unique_ptr<phy::spi::SpiServer>> spi_servers;
  for (const auto& target : options.spi) {
    phy::spi::SpiPortOptions po;
    po.frame = options.spi_frame;
    po.fixed = options.spi_fixed;
    po.mode = options.spi_mode;
    auto port = phy::spi::open_slave_port(target, po);
    if (!port) {
      logger->error("--spi {}", port.error().message);
      return port.error().code == Errc::invalid_argument ? kExitUsage : kExitStartup;
    }
    phy::spi::SpiServerOptions so_spi;
    so_spi.link.max_frame = options.spi_frame;
    so_spi.link.fixed = options.spi_fixed;
    so_spi.link.transfer_timeout = std::chrono::milliseconds(options.spi_timeout_ms);
    so_spi.logger = logger;
    auto spi = std::make_unique<phy::spi::SpiServer>(**server, std::move(port).value(), so_spi);
    logger->info("SPI slave on {}", spi->describe());
    spi_servers.push_back(std::move(spi));
  }

  phy::SocketServerOptions sockopts = options.socket;
  sockopts.logger = logger;
  phy::SocketServer sockets(**server, sockopts);
  // Socket activation: systemd bound and listens already (aisrvd.socket); the socket files stay its business.
  const std::vector<int> passed = take_listen_fds();
  for (int fd : passed) {
    auto ep = sockets.adopt(fd);
    if (!ep) {
      logger->error("{}", ep.error().message);
      return ep.error().code == Errc::invalid_argument ? kExitUsage : kExitStartup;
    }
    logger->info("listening on {} (socket passed by systemd)", ep->to_string());
  }
  std::vector<std::string> listen = options.listen;
  if (listen.empty() && options.usb_ffs.empty() && passed.empty()) listen.push_back(protocol::default_socket_target());
  for (const auto& l : listen) {
    auto ep = protocol::parse_socket_endpoint(l);
    if (!ep) {
      logger->error("--listen {}", ep.error().message);
      return kExitUsage;
    }
    auto bound = sockets.listen(*ep);
    if (!bound) {
      logger->error("{}", bound.error().message);
      return bound.error().code == Errc::invalid_argument ? kExitUsage : kExitStartup;
    }
    if (bound->kind == protocol::SocketEndpoint::Kind::unix_socket)
      logger->info("listening on {} (mode {:04o}{})", bound->to_string(), sockopts.socket_mode,
                   sockopts.socket_group ? fmt::format(", group {}", *sockopts.socket_group) : "");
    else
      logger->info("listening on {}", bound->to_string());
  }
  sockets.start();
  std::unique_ptr<phy::UsbFunctionServer> usb;
  if (!options.usb_ffs.empty()) {
    auto started = phy::UsbFunctionServer::start(**server, phy::UsbFunctionOptions{options.usb_ffs, "aisrv", logger});
    if (!started) {
      logger->error("--usb-ffs {}: {}", options.usb_ffs, started.error().message);
      sockets.stop();
      return kExitStartup;
    }
    usb = std::move(started).value();
    logger->info("USB: FunctionFS descriptors written to {}; the gadget can be bound to a UDC", options.usb_ffs);
  }
  for (auto& spi : spi_servers) spi->start();
  // Frigate detector endpoints: each on its own thread, each connection a session (docs/frigate.md).
  std::vector<std::unique_ptr<phy::frigate::FrigateEndpoint>> frigate;
  for (const auto& config : options.frigate) {
    auto endpoint = phy::frigate::FrigateEndpoint::bind(**server, config, logger);
    if (!endpoint) {
      logger->error("{}", endpoint.error().message);
      for (auto& started : frigate) started->stop();
      if (usb) usb->stop();
      for (auto& port : spi_servers) port->stop();
      sockets.stop();
      return endpoint.error().code == Errc::invalid_argument ? kExitUsage : kExitStartup;
    }
    (*endpoint)->start();
    logger->info("Frigate detector endpoint on {}{}", (*endpoint)->describe(),
                 config.accept_models ? " (accepts model files from Frigate)" : "");
    frigate.push_back(std::move(endpoint).value());
  }
  // --metrics: Prometheus /metrics, /healthz and /readyz on their own thread (docs/metrics.md). Declared after
  // everything it reads, so it stops first when serve returns; /readyz says "shutting down" until then.
  MetricsPage metrics_page(**server, options.boot, std::chrono::system_clock::now());
  if (!frigate.empty()) metrics_page.add_source(frigate_metrics(frigate));
  std::unique_ptr<ProbeHttpServer> metrics;
  if (!options.metrics.empty()) {
    auto ep = protocol::parse_socket_endpoint(options.metrics);
    Result<std::unique_ptr<ProbeHttpServer>> started = make_error(Errc::invalid_argument, "--metrics: no endpoint");
    if (ep) {
      ProbeHttpOptions ho = options.metrics_http;
      ho.logger = logger;
      ho.allow_remote = options.socket.allow_remote;
      std::vector<HttpRoute> routes;
      routes.push_back({"/metrics", [&metrics_page] {
                          return HttpAnswer{200, metrics_page.render(), "text/plain; version=0.0.4; charset=utf-8"};
                        }});
      routes.push_back({"/healthz", [] { return HttpAnswer{200, "ok\n"}; }});
      routes.push_back({"/readyz", [&metrics_page] {
                          const Readiness r = metrics_page.readiness();
                          return HttpAnswer{r.ready ? 200u : 503u, r.text};
                        }});
      started = ProbeHttpServer::start(*ep, std::move(ho), std::move(routes));
    } else {
      started = make_error(Errc::invalid_argument, "--metrics {}", ep.error().message);
    }
    if (!started) {
      logger->error("{}", started.error().message);
      (*server)->begin_shutdown();
      for (auto& endpoint : frigate) endpoint->stop();
      if (usb) usb->stop();
      for (auto& port : spi_servers) port->stop();
      sockets.stop();
      return started.error().code == Errc::invalid_argument ? kExitUsage : kExitStartup;
    }
    metrics = std::move(started).value();
    logger->info("metrics and health probes on http://{}:{} (/metrics, /healthz, /readyz)",
                 metrics->endpoint().host.find(':') != std::string::npos ? "[" + metrics->endpoint().host + "]"
                                                                          : metrics->endpoint().host,
                 metrics->endpoint().port);
  }
  logger->info("aisrvd {} ready ({} engine{})", AISRV_VERSION_STRING, (*server)->engine_count(),
               (*server)->engine_count() == 1 ? "" : "s");
  notify_ready(fmt::format("serving {} engine{}", (*server)->engine_count(), (*server)->engine_count() == 1 ? "" : "s"));

  const int sig = wait_for_termination(**server, logger);
  return shut_down(sig == SIGINT ? "SIGINT" : "SIGTERM", options, **server, sockets, usb.get(), spi_servers, frigate,
                   logger);
}

}  // namespace aisrv::daemon
