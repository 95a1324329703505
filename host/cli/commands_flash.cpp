// aisrv CLI — model-store commands over the protocol: flash write (progress bar on a terminal, throughput at the
// end), flash list, flash erase, flash read --out FILE, flash load; all use the global --engine and --json.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "aisrv/client/flash_client.hpp"
#include "cli_context.hpp"
#include "progress.hpp"
#include "file_io.hpp"

namespace aisrv::cli {

namespace {

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

nlohmann::json slot_json(const protocol::FlashSlotInfo& s) {
  return {{"slot", std::string(1, s.slot == 0 ? 'A' : 'B')},
          {"name", s.name},
          {"format", std::string(protocol::flash_format_name(s.format))},
          {"size", s.size},
          {"xxh64", hex64(s.xxh64)},
          {"seq", s.seq},
          {"parameters", s.parameters}};
}

std::string slot_text(const protocol::FlashSlotInfo& s) {
  return fmt::format("'{}' {} {} bytes xxh64 {} (slot {}, seq {})", s.name, protocol::flash_format_name(s.format),
                     s.size, hex64(s.xxh64), s.slot == 0 ? 'A' : 'B', s.seq);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double mib_per_s(uint64_t bytes, double secs) {
  return secs > 0 ? static_cast<double>(bytes) / (1024.0 * 1024.0) / secs : 0.0;
}

}  // namespace

void add_flash_commands(CLI::App& app, CliContext& ctx) {
  auto* flash = app.add_subcommand("flash", "Model store on the server (needs aisrvd --flash): write, list, erase, "
                                            "read, load");
  flash->require_subcommand(1);
  flash->fallthrough();

  struct WriteArgs {
    std::string file, name;
    unsigned chunk_kib = 0;
  };
  auto wa = std::make_shared<WriteArgs>();
  auto* write = flash->add_subcommand("write", "Store MODEL as the engine's model (chunked; the old model stays until "
                                               "the new one is verified and committed)");
  write->add_option("MODEL", wa->file, "Model file (.tflite, .hef)")->required();
  write->add_option("--name", wa->name, "Catalogue name (<= 32 bytes; default: the file name without extension)");
  write->add_option("--chunk", wa->chunk_kib, "KiB per chunk (default 1024, capped by the server's payload limit)")
      ->check(CLI::Range(1u, 65536u));
  write->fallthrough();
  write->callback([&ctx, wa] {
    ctx.run([&]() -> Status {
      const auto bytes = AISRV_TRY(read_file(wa->file));
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      client::FlashWriteOptions o;
      o.name = wa->name;
      if (o.name.empty()) {
        o.name = std::filesystem::path(wa->file).stem().string();
        if (o.name.size() > 32) o.name.resize(32);
      }
      o.chunk = wa->chunk_kib * 1024;
      ProgressBar bar(!ctx.options.json, fmt::format("engine {}: writing", e));
      o.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      const auto t0 = std::chrono::steady_clock::now();
      auto slot = client::flash_write(*c, e, bytes, o);
      bar.finish();
      if (!slot) return std::move(slot).error();
      const double secs = seconds_since(t0);
      if (ctx.options.json) {
        auto j = slot_json(*slot);
        j["engine"] = e;
        j["seconds"] = secs;
        j["mib_per_s"] = mib_per_s(bytes.size(), secs);
        ctx.print_json(j);
      } else {
        fmt::print("engine {}: stored {}\n", e, slot_text(*slot));
        fmt::print("{} bytes in {:.3f} s ({:.1f} MiB/s)\n", bytes.size(), secs, mib_per_s(bytes.size(), secs));
      }
      return ok();
    });
  });

  auto* list = flash->add_subcommand("list", "List the model store's catalogue (every engine, or --engine N)");
  list->fallthrough();
  list->callback([&ctx, &app] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const auto cat = AISRV_TRY(client::flash_catalogue(*c));
      // --engine given on the command line (anywhere) narrows the listing to that engine.
      const bool one = app.count("--engine") > 0;
      if (ctx.options.json) {
        nlohmann::json j{{"device", cat.device},         {"store_size", cat.store_size},
                         {"erase_block", cat.erase_block}, {"write_size", cat.write_size},
                         {"data_bytes", cat.data_bytes},   {"free_bytes", cat.free_bytes},
                         {"read_chunk", cat.read_chunk},   {"engines", nlohmann::json::array()}};
        for (const auto& e : cat.entries) {
          if (one && e.client != ctx.options.engine) continue;
          nlohmann::json je{{"engine", e.client}, {"seq", e.seq}};
          je["model"] = e.active ? slot_json(*e.active) : nlohmann::json(nullptr);
          je["previous"] = e.previous ? slot_json(*e.previous) : nlohmann::json(nullptr);
          if (e.writing) je["writing"] = {{"received", e.received}, {"expected", e.expected}};
          j["engines"].push_back(je);
        }
        ctx.print_json(j);
        return ok();
      }
      fmt::print("{}: {} bytes, {} byte erase blocks, {} of {} data bytes free\n", cat.device, cat.store_size,
                 cat.erase_block, cat.free_bytes, cat.data_bytes);
      for (const auto& e : cat.entries) {
        if (one && e.client != ctx.options.engine) continue;
        if (!e.active && !e.previous && !e.writing && !one) continue;
        fmt::print("engine {}: {}\n", e.client, e.active ? slot_text(*e.active) : std::string("no model"));
        if (e.previous) fmt::print("  previous: {}\n", slot_text(*e.previous));
        if (e.writing) fmt::print("  transfer in progress: {} of {} bytes\n", e.received, e.expected);
      }
      return ok();
    });
  });

  auto* erase = flash->add_subcommand("erase", "Remove the engine's stored model (its flash blocks are erased)");
  erase->fallthrough();
  erase->callback([&ctx] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      AISRV_TRY(client::flash_erase(*c, ctx.options.engine));
      if (ctx.options.json) ctx.print_json({{"erased", true}, {"engine", ctx.options.engine}});
      else fmt::print("engine {}: stored model erased\n", ctx.options.engine);
      return ok();
    });
  });

  auto out_file = std::make_shared<std::string>();
  auto* read = flash->add_subcommand("read", "Read the engine's stored model back (checked against its xxh64)");
  read->add_option("--out,-o", *out_file, "File to write the model to")->required();
  read->fallthrough();
  read->callback([&ctx, out_file] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      ProgressBar bar(!ctx.options.json, fmt::format("engine {}: reading", e));
      const auto t0 = std::chrono::steady_clock::now();
      auto bytes = client::flash_read(*c, e, [&bar](uint64_t d, uint64_t t) { bar.update(d, t); });
      bar.finish();
      if (!bytes) return std::move(bytes).error();
      const double secs = seconds_since(t0);
      AISRV_TRY(write_file(*out_file, *bytes));
      if (ctx.options.json)
        ctx.print_json({{"engine", e}, {"out", *out_file}, {"size", bytes->size()}, {"seconds", secs},
                        {"mib_per_s", mib_per_s(bytes->size(), secs)}, {"verified", true}});
      else
        fmt::print("engine {}: {} bytes read (xxh64 verified) to {} in {:.3f} s ({:.1f} MiB/s)\n", e, bytes->size(),
                   *out_file, secs, mib_per_s(bytes->size(), secs));
      return ok();
    });
  });

  auto arena = std::make_shared<bool>(false);
  auto* load = flash->add_subcommand("load", "Load the engine's stored model (SET_MODEL_SECONDARY_FLASH, or "
                                             "SET_MODEL_PRIMARY_FLASH with --arena); its hash is checked first");
  load->add_flag("--arena", *arena, "Place the model inside the engine's arena budget");
  load->fallthrough();
  load->callback([&ctx, arena] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      const auto t0 = std::chrono::steady_clock::now();
      AISRV_TRY(c->load_model_from_flash(e, *arena ? client::Placement::arena : client::Placement::external));
      const double secs = seconds_since(t0);
      if (ctx.options.json) ctx.print_json({{"engine", e}, {"loaded_from_flash", true}, {"seconds", secs}});
      else fmt::print("engine {}: stored model loaded ({:.3f} s)\n", e, secs);
      return ok();
    });
  });
}

}  // namespace aisrv::cli
