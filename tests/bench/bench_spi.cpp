// aisrv benchmarks — the SPI link (issue 6 goals), each figure beside a baseline from the same run:
//   wire efficiency = payload bytes / bytes clocked, for SET_INPUT_TENSOR and GET_OUTPUT_TENSOR of 64 B .. 1 MiB,
//     measured by counting every byte the master clocks on the simulated wire (status polls, headers, CRCs,
//     padding included), against the XMOS SPI protocol computed for the same transfer from its host client
//     (host_psoc: a 7-byte status poll {cmd, 16 dummy clocks, u32 status} before every 512-byte write block and
//     before a read; a command byte per block; reads: command byte + 16 dummy clocks + data rounded to words; a
//     final zero-length block when the length is a multiple of 512)                            (goal >= 0.95 at >= 4 KiB)
//   time per transaction on the simulated wire vs a raw AF_UNIX round trip of the same bytes
// The engine is the test double from tests/support (the engine is not what is measured).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "aisrv/client/spi_master.hpp"
#include "aisrv/phy/spi_server.hpp"
#include "aisrv/server.hpp"
#include "bench_report.hpp"
#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using Clock = std::chrono::steady_clock;

namespace {

// The XMOS SPI protocol's bytes on the wire for one transfer, from host_psoc/xcore_ie.c.
constexpr uint64_t kXmosStatusPoll = 1 + 2 + 4;  // command, 16 dummy clocks, status word
constexpr uint64_t kXmosBlock = 512;
uint64_t xmos_write_bytes(uint64_t n) {
  const uint64_t blocks = n / kXmosBlock + 1;  // "<=" loop: a final empty block when n is a multiple of 512
  return n + blocks * (kXmosStatusPoll + 1) + kXmosStatusPoll;  // + the status poll that sees the write done
}
uint64_t xmos_read_bytes(uint64_t n) { return kXmosStatusPoll + 1 + 2 + ((n + 3) & ~uint64_t{3}); }

// Counts the bytes of every CS window the client clocks, independently of the client's own statistics.
class CountingLink final : public client::SpiMasterLink {
 public:
  explicit CountingLink(std::unique_ptr<client::SpiMasterLink> inner) : inner_(std::move(inner)) {}
  uint16_t max_frame() const override { return inner_->max_frame(); }
  std::string describe() const override { return inner_->describe(); }
  uint64_t bytes = 0;
  uint64_t transactions = 0;

 private:
  int transact(std::span<const uint8_t> mosi, std::vector<uint8_t>& miso) override {
    bytes += mosi.size();
    ++transactions;
    return inner_->transaction(mosi, miso);
  }

  std::unique_ptr<client::SpiMasterLink> inner_;
};

struct Rig {
  test::TempDir dir;
  std::string path = dir.file("spi.sock");
  std::unique_ptr<server::Server> server;
  std::unique_ptr<phy::spi::SpiServer> spi;
  explicit Rig(uint16_t frame) {
    std::vector<std::unique_ptr<engine::InferenceBackend>> b;
    b.push_back(std::make_unique<test::TestBackend>());
    server = std::move(server::Server::create({}, std::move(b))).value();
    phy::spi::SpiPortOptions po;
    po.frame = frame;
    auto port = std::move(phy::spi::open_slave_port("sim:" + path, po)).value();
    phy::spi::SpiServerOptions so;
    so.link.max_frame = frame;
    spi = std::make_unique<phy::spi::SpiServer>(*server, std::move(port), so);
    spi->start();
  }
  ~Rig() { spi->stop(); }
};

void must(int rc, const char* what) {
  if (rc != AISRV_MCU_OK) throw std::runtime_error(std::string(what) + ": " + aisrv_mcu_strerror(rc));
}

std::string size_name(uint32_t n) {
  if (n >= (1u << 20)) return std::to_string(n >> 20) + "MiB";
  if (n >= 1024) return std::to_string(n >> 10) + "KiB";
  return std::to_string(n) + "B";
}

void efficiency(uint16_t frame, const std::string& suffix, const std::vector<uint32_t>& sizes) {
  Rig rig(frame);
  auto counting = std::make_unique<CountingLink>(std::move(client::open_sim_master(rig.path)).value());
  auto& link = *counting;
  aisrv_mcu_config_t cfg;
  aisrv_mcu_default_config(&cfg);
  cfg.max_frame = frame;
  aisrv_mcu_t c;
  const auto hal = link.hal();
  must(aisrv_mcu_init(&c, &hal, &cfg), "init");
  must(aisrv_mcu_hello(&c), "hello");
  for (uint32_t n : sizes) {
    const auto model = test::make_test_model(test::TestModelSpec{{n}, {n}, 1, 0});
    must(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0), "load");
    std::vector<uint8_t> data(n, 0x5A);
    uint64_t before = link.bytes;
    must(aisrv_mcu_set_input(&c, 0, 0, data.data(), n), "set input");
    const double set_eff = static_cast<double>(n) / static_cast<double>(link.bytes - before);
    must(aisrv_mcu_start_inference(&c, 0), "infer");
    uint32_t len = 0;
    before = link.bytes;
    must(aisrv_mcu_get_output(&c, 0, 0, data.data(), n, &len), "get output");
    const double get_eff = static_cast<double>(n) / static_cast<double>(link.bytes - before);
    const double xset = static_cast<double>(n) / static_cast<double>(xmos_write_bytes(n));
    const double xget = static_cast<double>(n) / static_cast<double>(xmos_read_bytes(n));
    bench::report("spi_efficiency_set_" + size_name(n) + suffix, set_eff, "payload/clocked", "xmos_spi", xset,
                  "payload/clocked", set_eff / xset);
    bench::report("spi_efficiency_get_" + size_name(n) + suffix, get_eff, "payload/clocked", "xmos_spi", xget,
                  "payload/clocked", get_eff / xget);
  }
  if (c.stats.bad_replies || c.stats.rejected) throw std::runtime_error("link errors on a clean simulated wire");
}

// A raw AF_UNIX peer answering {u32 n, n bytes} with n bytes: the simulated wire's framing with nothing behind it.
class RawPeer {
 public:
  explicit RawPeer(const std::string& path) : path_(path) {
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) || ::listen(listen_fd_, 1))
      throw std::runtime_error("raw peer bind failed");
    thread_ = std::thread([this] { serve(); });
  }
  ~RawPeer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  static bool io_all(int fd, void* p, size_t n, bool write) {
    auto* b = static_cast<uint8_t*>(p);
    while (n) {
      const ssize_t r = write ? ::write(fd, b, n) : ::read(fd, b, n);
      if (r <= 0) return false;
      b += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int connect() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a)) throw std::runtime_error("raw connect failed");
    return fd;
  }

 private:
  void serve() {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    std::vector<uint8_t> buf(1 << 20);
    uint32_t n = 0;
    while (io_all(fd, &n, 4, false) && n <= buf.size() && io_all(fd, buf.data(), n, false) &&
           io_all(fd, buf.data(), n, true)) {
    }
    ::close(fd);
  }
  std::string path_;
  int listen_fd_ = -1;
  std::thread thread_;
};

double raw_round_trip_us(const std::string& path, uint32_t n, int iterations) {
  RawPeer peer(path);
  const int fd = peer.connect();
  std::vector<uint8_t> msg(4 + n, 0xFF), reply(n);
  std::memcpy(msg.data(), &n, 4);
  std::vector<double> us;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = Clock::now();
    RawPeer::io_all(fd, msg.data(), msg.size(), true);
    RawPeer::io_all(fd, reply.data(), n, false);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(fd);
  return bench::percentile(us, 0.5);
}

void transaction_time() {
  Rig rig(AISRV_SPI_DEFAULT_FRAME);
  auto counting = std::make_unique<CountingLink>(std::move(client::open_sim_master(rig.path)).value());
  auto& link = *counting;
  aisrv_mcu_t c;
  const auto hal = link.hal();
  must(aisrv_mcu_init(&c, &hal, nullptr), "init");
  must(aisrv_mcu_hello(&c), "hello");
  const uint32_t chunk = aisrv_spi_chunk_size(AISRV_SPI_DEFAULT_FRAME);
  const auto model = test::make_test_model(test::TestModelSpec{{chunk}, {chunk}, 1, 0});
  must(aisrv_mcu_load_model(&c, 0, model.data(), static_cast<uint32_t>(model.size()), 0), "load");
  std::vector<uint8_t> data(chunk, 1);
  must(aisrv_mcu_set_input(&c, 0, 0, data.data(), chunk), "set input");
  must(aisrv_mcu_start_inference(&c, 0), "infer");

  // small transactions: HELLO is a 36-byte BEGIN and a 36-byte status transaction
  constexpr int kIterations = 2000;
  std::vector<double> per_tx;
  for (int i = 0; i < kIterations; ++i) {
    const uint64_t tx0 = link.transactions;
    const auto t0 = Clock::now();
    must(aisrv_mcu_hello(&c), "hello");
    per_tx.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                     static_cast<double>(link.transactions - tx0));
  }
  const double small = bench::percentile(per_tx, 0.5);
  const double raw_small = raw_round_trip_us(rig.dir.file("raw1.sock"), AISRV_SPI_OVERHEAD, kIterations);
  bench::report("spi_sim_transaction_36B_p50", small, "us", "raw_unix_roundtrip_36B", raw_small, "us",
                small / raw_small);
  // full frames: GET_OUTPUT_TENSOR of one chunk = a 36-byte BEGIN and one 4092-byte transaction
  per_tx.clear();
  for (int i = 0; i < kIterations / 4; ++i) {
    uint32_t len = 0;
    const auto t0 = Clock::now();
    must(aisrv_mcu_get_output(&c, 0, 0, data.data(), chunk, &len), "get output");
    per_tx.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double full = bench::percentile(per_tx, 0.5);
  const double raw_full = raw_round_trip_us(rig.dir.file("raw2.sock"), AISRV_SPI_DEFAULT_FRAME, kIterations / 4) +
                          raw_small;
  bench::report("spi_sim_get_4056B_p50", full, "us", "raw_unix_roundtrip_36B+4092B", raw_full, "us",
                full / raw_full);
}

}  // namespace

int main() {
  try {
    const std::vector<uint32_t> sizes{64, 256, 1024, 4096, 16384, 65536, 262144, 1u << 20};
    efficiency(AISRV_SPI_DEFAULT_FRAME, "", sizes);
    efficiency(AISRV_SPI_MAX_FRAME - 3, "_frame65532", {4096, 65536, 1u << 20});
    transaction_time();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_spi: %s\n", e.what());
    return 1;
  }
  return 0;
}
