// aisrv benchmark — the model store on a flash image file, each figure against a baseline measured in this run:
//   flash_write: a 16 MiB model written through the store (erase, program with the NOR check, read-back hash
//                verification, catalogue commit, fdatasync) vs raw pwrite of the same bytes to the same image file
//                followed by fdatasync (the same durability);
//   flash_read:  READ_MODEL (read + xxHash64 check) vs raw pread of the same bytes from the same file;
//   flash_load:  SET_MODEL_SECONDARY_FLASH to ready in the interpreter vs SET_MODEL_SECONDARY with the same bytes
//                already in memory (the engine is a copy-the-bytes double, so the figure is the store's share);
//   flash_load_cpu_<model>: the same with the CPU engine and a real TFLite model from the shared test data (when
//                present: AISRV_TESTDATA or the configured path).
// Medians of several rounds. Usage: bench_flash [--size MiB] [--rounds N] [--dir DIR]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "aisrv/engine/builtin.hpp"
#include "aisrv/engine/registry.hpp"
#include "aisrv/flash/file_device.hpp"
#include "aisrv/flash/store.hpp"
#include "aisrv/server.hpp"
#include "bench_report.hpp"
#include "testdata.hpp"

using namespace aisrv;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_flash: %s\n", what.c_str());
  std::exit(1);
}

// An engine that accepts any bytes and keeps a copy, as a real engine does at load (bench double).
class CopyBackend final : public engine::InferenceBackend {
 public:
  std::string_view kind() const override { return "copy"; }
  std::string options() const override { return ""; }
  Result<engine::ModelInfo> load(std::span<const uint8_t> model, const engine::LoadOptions&) override {
    copy_.assign(model.begin(), model.end());
    engine::ModelInfo info;
    info.format = "bytes";
    return info;
  }
  void unload() override { copy_.clear(); }
  std::span<uint8_t> input(size_t) override { return {}; }
  std::span<const uint8_t> output(size_t) const override { return {}; }
  Result<std::vector<engine::LayerTime>> invoke(const engine::InvokeContext&) override {
    return std::vector<engine::LayerTime>{};
  }

 private:
  std::vector<uint8_t> copy_;
};

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 16;
  int rounds = 7;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--size") mib = std::stoul(argv[i + 1]);
    else if (a == "--rounds") rounds = std::stoi(argv[i + 1]);
    else if (a == "--dir") dir = argv[i + 1];
  }
  const size_t bytes = mib << 20;
  const auto path = dir / ("aisrv-bench-flash-" + std::to_string(getpid()) + ".img");
  std::vector<uint8_t> model(bytes);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i + 8 <= model.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(model.data() + i, &v, 8);
  }
  std::memcpy(model.data() + 4, "TFL3", 4);

  auto dev = flash::FileFlash::create(path, {uint64_t{4 * mib + 4} << 20, 64 * 1024, 1});
  if (!dev) die(dev.error().what());
  auto store = flash::ModelStore::format(**dev, {4});
  if (!store) die(store.error().what());
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) die("cannot open the image for the raw baseline");

  // Warm-up: both slots of client 0 hold a model, so every measured write reuses dirty blocks (erase first).
  for (int i = 0; i < 2; ++i)
    if (auto e = (*store)->write_model(0, "warm", model); !e) die(e.error().what());

  std::vector<double> store_w, raw_w, store_r, raw_r;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    auto e = (*store)->write_model(0, "bench", model);
    store_w.push_back(seconds(t0));
    if (!e) die(e.error().what());
    const uint64_t at = e->active_slot()->extent_offset;  // the raw baseline writes the same bytes, same place
    t0 = Clock::now();
    for (size_t done = 0; done < bytes;) {
      const ssize_t n = ::pwrite(fd, model.data() + done, bytes - done, static_cast<off_t>(at + 4 + done));
      if (n <= 0) die("raw pwrite failed");
      done += static_cast<size_t>(n);
    }
    if (::fdatasync(fd) != 0) die("fdatasync failed");
    raw_w.push_back(seconds(t0));

    t0 = Clock::now();
    auto m = (*store)->read_model(0);
    store_r.push_back(seconds(t0));
    // The raw write put the same bytes in the slot, so the stored model still verifies.
    if (!m || *m != model) die(m ? "read-back differs" : m.error().what());
    // Raw reads in the store's piece size (256 KiB), into a fresh buffer as READ_MODEL returns one.
    t0 = Clock::now();
    std::vector<uint8_t> raw(bytes);
    for (size_t done = 0; done < bytes;) {
      const size_t want = std::min<size_t>(256 * 1024, bytes - done);
      const ssize_t n = ::pread(fd, raw.data() + done, want, static_cast<off_t>(at + 4 + done));
      if (n <= 0) die("raw pread failed");
      done += static_cast<size_t>(n);
    }
    raw_r.push_back(seconds(t0));
    if (raw != model) die("raw read-back differs");
  }
  const double mb = static_cast<double>(bytes) / (1024.0 * 1024.0);
  const double sw = mb / bench::percentile(store_w, 0.5), rw = mb / bench::percentile(raw_w, 0.5);
  const double sr = mb / bench::percentile(store_r, 0.5), rr = mb / bench::percentile(raw_r, 0.5);
  bench::report("flash_write_" + std::to_string(mib) + "mib", sw, "MiB/s", "raw_pwrite_fdatasync", rw, "MiB/s",
                sw / rw);
  bench::report("flash_read_" + std::to_string(mib) + "mib", sr, "MiB/s", "raw_pread", rr, "MiB/s", sr / rr);

  // SET_MODEL_SECONDARY_FLASH to ready vs SET_MODEL_SECONDARY of the same bytes, in the interpreter.
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(std::make_unique<CopyBackend>());
  server::ServerOptions so;
  so.store = store->get();
  auto srv = server::Server::create(std::move(so), std::move(backends));
  if (!srv) die(srv.error().what());
  std::vector<double> flash_l, wire_l;
  protocol::Response resp;
  auto session = (*srv)->open_session(server::Peer::of(server::Trust::process, "local", "bench"));
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    (*srv)->handle(*session, {protocol::Header{static_cast<uint32_t>(protocol::Command::SET_MODEL_SECONDARY_FLASH), 0, 0}, {}},
                   resp);
    flash_l.push_back(seconds(t0));
    if (resp.status != 0) die("SET_MODEL_SECONDARY_FLASH failed");
    t0 = Clock::now();
    (*srv)->handle(*session, {protocol::Header{static_cast<uint32_t>(protocol::Command::SET_MODEL_SECONDARY), 0, 0}, model},
                   resp);
    wire_l.push_back(seconds(t0));
    if (resp.status != 0) die("SET_MODEL_SECONDARY failed");
  }
  const double fl = bench::percentile(flash_l, 0.5) * 1e3, wl = bench::percentile(wire_l, 0.5) * 1e3;
  bench::report("flash_load_" + std::to_string(mib) + "mib", fl, "ms", "wire_load_in_memory", wl, "ms", fl / wl);
  (*srv)->close_session(*session);
  srv->reset();

  // The same with the CPU engine and a real model, when the shared test data is there.
  if (const auto td = test::testdata_dir()) {
    const auto file = *td / "tflite/tensorflow__tflite-micro/mobilenet_v2_quantized_1x3x224x224.tflite";
    if (std::filesystem::exists(file)) {
      const auto tfl = test::read_file(file);
      if (auto e = (*store)->write_model(1, "mobilenet_v2", tfl); !e) die(e.error().what());
      engine::BackendRegistry registry;
      engine::register_builtin_backends(registry);
      auto spec = engine::parse_engine_spec("cpu");
      if (!spec) die(spec.error().what());
      std::vector<std::unique_ptr<engine::InferenceBackend>> cpu;
      for (int i = 0; i < 2; ++i) {
        auto b = registry.create(*spec);
        if (!b) die(b.error().what());
        cpu.push_back(std::move(*b));
      }
      server::ServerOptions co;
      co.store = store->get();
      auto cs = server::Server::create(std::move(co), std::move(cpu));
      if (!cs) die(cs.error().what());
      flash_l.clear();
      wire_l.clear();
      auto cpu_session = (*cs)->open_session(server::Peer::of(server::Trust::process, "local", "bench"));
      for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        (*cs)->handle(*cpu_session, {protocol::Header{static_cast<uint32_t>(protocol::Command::SET_MODEL_SECONDARY_FLASH), 1, 0},
                       {}},
                      resp);
        flash_l.push_back(seconds(t0));
        if (resp.status != 0) die("CPU engine: SET_MODEL_SECONDARY_FLASH failed");
        t0 = Clock::now();
        (*cs)->handle(*cpu_session, {protocol::Header{static_cast<uint32_t>(protocol::Command::SET_MODEL_SECONDARY), 1, 0}, tfl},
                      resp);
        wire_l.push_back(seconds(t0));
        if (resp.status != 0) die("CPU engine: SET_MODEL_SECONDARY failed");
      }
      const double cf = bench::percentile(flash_l, 0.5) * 1e3, cw = bench::percentile(wire_l, 0.5) * 1e3;
      bench::report("flash_load_cpu_mobilenet_v2", cf, "ms", "wire_load_in_memory", cw, "ms", cf / cw);
    }
  }
  ::close(fd);
  std::filesystem::remove(path);
  return 0;
}
