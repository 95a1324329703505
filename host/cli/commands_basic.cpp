// aisrv CLI — identity and diagnostics: id, version, status, session, hello, log, cancel.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "aisrv/build_info.hpp"
#include "aisrv/protocol/limits.h"
#include "cli_context.hpp"

namespace aisrv::cli {

namespace {

std::string capability_names(uint32_t caps) {
  static const std::pair<uint32_t, const char*> names[] = {
      {AISRV_CAP_CRC32, "crc32"},   {AISRV_CAP_FLASH, "flash"}, {AISRV_CAP_TIMING_RECORD, "timing-record"},
      {AISRV_CAP_CANCEL, "cancel"}, {AISRV_CAP_SENSOR, "sensor"}, {AISRV_CAP_GPIO, "gpio"},
      {AISRV_CAP_CHAIN, "chain"},   {AISRV_CAP_USB_ONE_TRANSFER, "usb-one-transfer"},
      {AISRV_CAP_INFER, "infer"},   {AISRV_CAP_SESSIONS, "sessions"}, {AISRV_CAP_STATS, "stats"}, {AISRV_CAP_I2C, "i2c"},
      {AISRV_CAP_MODEL_METADATA, "model-metadata"}};
  std::string s;
  for (auto [bit, name] : names)
    if (caps & bit) s += (s.empty() ? "" : ",") + std::string(name);
  return s.empty() ? "none" : s;
}

}  // namespace

void add_basic_commands(CLI::App& app, CliContext& ctx) {
  app.add_subcommand("id", "Print the server id (GET_ID)")->callback([&ctx] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t id = AISRV_TRY(c->id());
      if (ctx.options.json) ctx.print_json({{"id", id}});
      else fmt::print("{:#010x}\n", id);
      return ok();
    });
  });

  app.add_subcommand("version", "Print client and server versions, protocol and capabilities (GET_VERSION)")
      ->callback([&ctx] {
        ctx.run([&]() -> Status {
          auto* c = AISRV_TRY(ctx.client());
          const auto& v = c->server_version();
          if (ctx.options.json) {
            ctx.print_json({{"client", {{"version", AISRV_VERSION_STRING},
                                        {"protocol", fmt::format("{}.{}", AISRV_PROTOCOL_MAJOR, AISRV_PROTOCOL_MINOR)}}},
                            {"server", {{"version", v.server_version},
                                        {"protocol", fmt::format("{}.{}", v.major, v.minor)},
                                        {"min_major", v.min_major},
                                        {"capabilities", capability_names(v.capabilities)},
                                        {"max_payload", v.max_payload},
                                        {"engines", v.engines}}}});
          } else {
            fmt::print("client: aisrv {} (protocol {}.{})\n", AISRV_VERSION_STRING, AISRV_PROTOCOL_MAJOR,
                       AISRV_PROTOCOL_MINOR);
            fmt::print("server: {} (protocol {}.{}, speaks majors {}..{})\n", v.server_version, v.major, v.minor,
                       v.min_major, v.major);
            fmt::print("engines: {}\nmax payload: {} bytes\ncapabilities: {}\n", v.engines, v.max_payload,
                       capability_names(v.capabilities));
          }
          return ok();
        });
      });

  app.add_subcommand("status", "Print the engine's state (GET_STATUS: BUSY/SENSING; error bits belong to each session, "
                               "so a new invocation has none) and what it runs (GET_ENGINE_INFO)")
      ->callback([&ctx] {
        ctx.run([&]() -> Status {
          auto* c = AISRV_TRY(ctx.client());
          const uint32_t e = ctx.options.engine;
          const uint32_t word = AISRV_TRY(c->status(e));
          const auto info = AISRV_TRY(c->engine_info(e));
          if (ctx.options.json) {
            ctx.print_json({{"engine", e},
                            {"status", word},
                            {"status_names", protocol::status_names(word)},
                            {"kind", info.kind},
                            {"options", info.options},
                            {"model_loaded", info.model_loaded},
                            {"model_format", info.model_format},
                            {"model_bytes", info.model_bytes},
                            {"model_source", info.model_source},
                            {"inferences", info.inferences},
                            {"chained_to", info.chained_to}});
          } else {
            fmt::print("engine {}: {} ({})\n", e, info.kind, info.options.empty() ? "default options" : info.options);
            fmt::print("status: {:#06x} {}\n", word, protocol::status_names(word));
            if (info.model_loaded)
              fmt::print("model: {} bytes, format {}, loaded from {}\n", info.model_bytes, info.model_format,
                         info.model_source);
            else
              fmt::print("model: none\n");
            fmt::print("inferences: {}\n", info.inferences);
            if (!info.chained_to.empty()) fmt::print("chained to engine {}\n", info.chained_to);
          }
          return ok();
        });
      });

  app.add_subcommand("session", "Print who the server takes this connection for: peer, role (user/admin), memory cap "
                                "and queue limit (GET_SESSION_INFO)")
      ->callback([&ctx] {
        ctx.run([&]() -> Status {
          auto* c = AISRV_TRY(ctx.client());
          const auto s = AISRV_TRY(c->session_info());
          if (ctx.options.json) {
            ctx.print_json({{"session", s.id},
                            {"transport", s.transport},
                            {"peer", s.peer},
                            {"role", std::string(protocol::role_name(s.role))},
                            {"authenticated", s.authenticated},
                            {"memory_used", s.memory_used},
                            {"memory_cap", s.memory_cap},
                            {"max_queued", s.max_queued},
                            {"sessions", s.sessions}});
          } else {
            fmt::print("session {} ({}), role {}{}\n", s.id, s.peer, protocol::role_name(s.role),
                       s.authenticated ? "" : ", not authenticated (AUTH needed)");
            fmt::print("memory: {} of {} bytes; up to {} queued requests\n", s.memory_used, s.memory_cap,
                       s.max_queued);
            fmt::print("sessions open on the server: {}\n", s.sessions);
          }
          return ok();
        });
      });

  auto* cancel = app.add_subcommand("cancel", "Cancel the inference running on the engine (CANCEL_INFER with tensor "
                                              "1: any session's; needs the admin role)");
  cancel->callback([&ctx] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      AISRV_TRY(c->cancel(ctx.options.engine, /*any=*/true));
      if (ctx.options.json) ctx.print_json({{"engine", ctx.options.engine}, {"cancel", "sent"}});
      else fmt::print("engine {}: cancel sent\n", ctx.options.engine);
      return ok();
    });
  });

  auto* hello = app.add_subcommand("hello", "Send HELLO and report the round-trip time");
  auto count = std::make_shared<unsigned>(1);
  hello->add_option("-n,--count", *count, "Number of round trips")->check(CLI::Range(1u, 1000000u));
  hello->callback([&ctx, count] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      std::vector<double> us;
      for (unsigned i = 0; i < *count; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        AISRV_TRY(c->hello());
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(us.begin(), us.end());
      const double median = us[us.size() / 2];
      if (ctx.options.json) ctx.print_json({{"hello", "ok"}, {"count", us.size()}, {"median_us", median}});
      else fmt::print("hello: ok, {} round trip(s), median {:.1f} us\n", us.size(), median);
      return ok();
    });
  });

  auto* log = app.add_subcommand("log", "Print the engine's debug log (GET_DEBUG_LOG)");
  auto lines = std::make_shared<unsigned>(0);
  auto server_log = std::make_shared<bool>(false);
  log->add_option("-n,--lines", *lines, "Last N lines (0 = all)");
  log->add_flag("--server", *server_log, "The server's log instead of the engine's");
  log->callback([&ctx, lines, server_log] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = *server_log ? AISRV_ENGINE_SERVER : ctx.options.engine;
      const std::string text = AISRV_TRY(c->debug_log(e, *lines));
      if (ctx.options.json) {
        nlohmann::json arr = nlohmann::json::array();
        size_t start = 0;
        while (start < text.size()) {
          size_t end = text.find('\n', start);
          if (end == std::string::npos) end = text.size();
          arr.push_back(text.substr(start, end - start));
          start = end + 1;
        }
        ctx.print_json({{"log", arr}});
      } else {
        std::cout << text;
      }
      return ok();
    });
  });
}

}  // namespace aisrv::cli
