// Integration test: one server, many clients at once, everything mixed — 32 socket clients (Unix and TCP) and one
// in-process channel inferring on two engines (SET+START+GET and INFER), an admin reloading models (same and other
// shapes), flash transfers racing for one engine's slot (and one abandoned by a disconnect), engine-wide cancels,
// clients vanishing mid-frame. Every client checks each output against its own input: not one wrong output is
// allowed, whatever errors the model changes and cancels cause. Afterwards every session is gone, the memory is
// back, and ASan finds no leak when the process ends.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include "aisrv/client/client.hpp"
#include "aisrv/client/flash_client.hpp"
#include "aisrv/flash/store.hpp"
#include "aisrv/phy/local_channel.hpp"
#include "aisrv/phy/socket_server.hpp"
#include "aisrv/protocol/stream_framing.hpp"
#include "aisrv/server.hpp"
#include "flash_test_util.hpp"
#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace std::chrono_literals;

namespace {

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// An output is right when every byte is the client's own input byte + 1 (output 0 of the test backend), whatever
// the output's size (the model may have changed shape between rounds).
bool right_output(const std::vector<uint8_t>& in, std::span<const uint8_t> out) {
  if (out.empty()) return false;
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k] != static_cast<uint8_t>(in[k % in.size()] + 1)) return false;
  return true;
}

// Errors a client may see because of what others do: no model for a moment, a model change under its tensors,
// an input of the old size, an engine-wide cancel.
bool expected_error(Errc e) {
  return e == Errc::no_model || e == Errc::model_changed || e == Errc::bad_length || e == Errc::cancelled ||
         e == Errc::infer_error;  // GET_OUTPUT after a cancelled or failed inference: no output yet
}

struct Tally {
  std::atomic<int> right{0}, wrong{0}, expected{0}, unexpected{0};
  std::atomic<int> infer_calls{0};
  void error(const Error& e, const char* what) {
    if (expected_error(e.code)) {
      ++expected;
    } else if (++unexpected < 10) {
      MESSAGE(what << ": " << e.what());
    }
  }
};

std::vector<uint8_t> random_input(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  if (v[0] == 0xEE) v[0] = 0;  // the test backend's poison byte
  return v;
}

void inference_client(const std::string& target, int id, int rounds, Tally& t) {
  auto c = client::Client::connect(target);
  if (!c) {
    t.error(c.error(), "connect");
    return;
  }
  std::mt19937 rng(static_cast<uint32_t>(id));
  std::vector<uint8_t> out;
  for (int i = 0; i < rounds; ++i) {
    const uint32_t engine = static_cast<uint32_t>(rng() % 2);
    auto len = c->input_length(engine, 0);
    if (!len) {
      t.error(len.error(), "input_length");
      continue;
    }
    const auto in = random_input(rng, *len);
    if (i % 2 == 0) {  // INFER: one round trip
      const std::span<const uint8_t> inputs[] = {in};
      std::vector<std::vector<uint8_t>> outs;
      ++t.infer_calls;
      if (auto st = c->infer(engine, inputs, outs); !st) {
        t.error(st.error(), "infer");
        continue;
      }
      if (right_output(in, outs.at(0))) ++t.right;
      else ++t.wrong;
      continue;
    }
    if (auto st = c->set_input(engine, 0, in); !st) {
      t.error(st.error(), "set_input");
      continue;
    }
    if (auto st = c->start_inference(engine); !st) {
      t.error(st.error(), "start_inference");
      continue;
    }
    if (auto st = c->get_output(engine, 0, out); !st) {
      t.error(st.error(), "get_output");
      continue;
    }
    if (right_output(in, out)) ++t.right;
    else ++t.wrong;
  }
}

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST_CASE("many clients, one server: zero wrong outputs, every session freed, memory bounded") {
  test::TempDir dir;
  test::MemoryFlash dev{flash::Geometry{4u << 20, 4096, 1}};
  auto store = test::format_store(dev, 2);
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(std::make_unique<test::TestBackend>());
  backends.push_back(std::make_unique<test::TestBackend>());
  server::ServerOptions so;
  so.store = store.get();
  auto server = std::move(server::Server::create(std::move(so), std::move(backends))).value();
  phy::SocketServerOptions po;
  po.io_threads = 2;
  phy::SocketServer sockets(*server, po);
  const std::string sock = dir.file("many.sock");
  REQUIRE(sockets.listen(*protocol::parse_socket_endpoint("unix:" + sock)).ok());
  auto tcp = sockets.listen(*protocol::parse_socket_endpoint("tcp:127.0.0.1:0"));
  REQUIRE(tcp.ok());
  sockets.start();
  const std::string unix_target = "unix:" + sock, tcp_target = tcp->to_string();

  auto admin = std::move(client::Client::connect(unix_target)).value();
  const auto small = test::make_test_model(test::TestModelSpec{{64}, {64}, 2, 100});
  REQUIRE(admin.load_model(0, small).ok());
  REQUIRE(admin.load_model(1, small).ok());

  auto run_storm = [&](int rounds) {
    Tally t;
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    // 32 socket clients, alternately Unix and TCP
    for (int i = 0; i < 32; ++i)
      threads.emplace_back([&, i] { inference_client(i % 2 ? tcp_target : unix_target, i, rounds, t); });
    // one in-process client on engine 1
    threads.emplace_back([&] {
      auto ch = std::move(phy::LocalChannel::open(*server, 1, "storm")).value();
      std::mt19937 rng(999);
      std::vector<uint8_t> out;
      for (int i = 0; i < rounds; ++i) {
        auto len = ch.input_length(0);
        auto olen = ch.output_length(0);
        if (!len || !olen) {
          t.error(len ? olen.error() : len.error(), "local length");
          continue;
        }
        const auto in = random_input(rng, *len);
        out.assign(*olen, 0);
        Status st = ch.set_input(0, in);
        if (st) st = ch.start_inference();
        if (st) st = ch.get_output(0, out);
        if (!st) t.error(st.error(), "local");
        else if (right_output(in, out)) ++t.right;
        else ++t.wrong;
      }
    });
    // an admin changing models under everyone (same shapes and other shapes)
    threads.emplace_back([&] {
      auto c = std::move(client::Client::connect(unix_target)).value();
      const auto other = test::make_test_model(test::TestModelSpec{{48}, {80}, 3, 50});
      for (int i = 0; !stop; ++i) {
        std::this_thread::sleep_for(15ms);
        (void)c.load_model(static_cast<uint32_t>(i % 2), i % 3 ? small : other);
      }
      (void)c.load_model(0, small);
      (void)c.load_model(1, small);
    });
    // engine-wide cancels now and then
    threads.emplace_back([&] {
      auto c = std::move(client::Client::connect(unix_target)).value();
      while (!stop) {
        std::this_thread::sleep_for(40ms);
        (void)c.cancel(0, /*any=*/true);
      }
    });
    // two writers racing for engine 0's flash slot; one more that vanishes half way
    std::atomic<int> flash_ok{0}, flash_denied{0};
    for (int w = 0; w < 2; ++w)
      threads.emplace_back([&, w] {
        auto c = std::move(client::Client::connect(w ? tcp_target : unix_target)).value();
        std::vector<uint8_t> model = test::make_test_model(test::TestModelSpec{{8}, {8}, 1, 0, 200000});
        model.back() = static_cast<uint8_t>(w);
        while (!stop) {
          client::FlashWriteOptions fo;
          fo.name = "w" + std::to_string(w);
          fo.chunk = 16384;
          auto r = client::flash_write(c, 0, model, fo);
          if (r) ++flash_ok;
          else if (r.error().code == Errc::denied) ++flash_denied;
          else t.error(r.error(), "flash_write");
          std::this_thread::sleep_for(5ms);
        }
      });
    threads.emplace_back([&] {
      for (int i = 0; i < 5 && !stop; ++i) {
        auto c = std::move(client::Client::connect(unix_target)).value();
        std::vector<uint8_t> p;
        protocol::encode(protocol::FlashBegin{100000, std::nullopt, 0, "gone"}, p);
        (void)c.call(static_cast<uint32_t>(protocol::Command::SET_FLASH_BEGIN), 0, 0, p);
        std::this_thread::sleep_for(20ms);
      }  // each connection closes with its transfer open
    });
    // clients that vanish mid-frame
    threads.emplace_back([&] {
      std::mt19937 rng(5);
      while (!stop) {
        const int fd = connect_unix(sock);
        if (fd < 0) continue;
        const auto prefix = protocol::stream::encode_request_prefix(protocol::Header{0x83, static_cast<uint32_t>(rng() % 2), 0}, 64);
        (void)!::write(fd, prefix.data(), rng() % 2 ? prefix.size() : 7);
        ::close(fd);
        std::this_thread::sleep_for(3ms);
      }
    });
    for (int i = 0; i < 33; ++i) threads[static_cast<size_t>(i)].join();
    stop = true;
    for (size_t i = 33; i < threads.size(); ++i) threads[i].join();
    MESSAGE("storm: " << t.right.load() << " right outputs (" << t.infer_calls.load() << " INFER calls), "
                      << t.wrong.load() << " wrong, " << t.expected.load() << " expected refusals, "
                      << t.unexpected.load() << " unexpected errors; flash writes " << flash_ok.load()
                      << " committed, " << flash_denied.load() << " denied (the other writer's transfer was open)");
    CHECK(t.wrong == 0);
    CHECK(t.unexpected == 0);
    CHECK(t.right > 33 * rounds / 4);  // most rounds get through despite the churn
    CHECK(flash_ok > 0);
  };

  run_storm(100);  // warm-up: buffers, threads and allocator caches reach their working size
  const long after_first = rss_kib();
  run_storm(100);
  const long after_second = rss_kib();
  MESSAGE("RSS after storm 1: " << after_first << " KiB, after storm 2: " << after_second << " KiB");
  CHECK(after_second - after_first < 48 * 1024);

  // Every client is gone: only the admin's session remains, the sockets close theirs on the way out.
  for (int i = 0; i < 500 && (server->session_count() > 1 || sockets.connections() > 1); ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(sockets.connections() == 1);
  CHECK(server->session_count() == 1);
  CHECK_FALSE(store->update_progress(0).has_value());  // no transfer left open by a vanished writer
  auto cat = client::flash_catalogue(admin);
  REQUIRE(cat.ok());
  CHECK(cat->entries[0].active.has_value());
  sockets.stop();
  CHECK(server->session_count() == 0);
}
