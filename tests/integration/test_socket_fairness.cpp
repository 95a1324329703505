// Integration test: what one socket peer must not be able to do to the others, and what happens to the work of a
// client that leaves (issue "hardening from an independent probe"). Each case reproduces a probe finding against
// the test server (the daemon's serving code with test-double engines):
//   - a request trickled a byte at a time is dropped at its deadline (frame timeout + length at the minimum rate);
//   - half-sent requests of one peer cannot make another peer's small INFER fail (per-peer receive share);
//   - TCP peers share one connection pool whatever their source address; admins keep reserved slots; a refused
//     connection is told ERROR_LIMIT;
//   - loopback TCP peers are users unless they AUTH; failed AUTH is throttled; a link that needs AUTH is closed when
//     it does not come;
//   - two local users of different uids, each opening all the connections it can, leave room for root and a third
//     user; a TCP peer without the token cannot hold the TCP pool against one that has it;
//   - connection churn writes a bounded number of log lines;
//   - a client that closes takes its queued and running work with it; CANCEL_INFER overtakes; --max-queued bounds
//     pipelined requests;
//   - shutdown answers the requests that were read (ERROR_CANCELLED at the deadline) and does not wait for bytes
//     that are not coming.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <thread>

#include "aisrv/client/client.hpp"
#include "aisrv/protocol/stream_framing.hpp"
#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A raw client socket, so a test can do what a client library never does (trickle, pipeline, vanish).
class Raw {
 public:
  static Raw unix_socket(const std::string& path) {
    Raw r(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    r.ok_ = ::connect(r.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    return r;
  }
  // From `source` (e.g. "127.0.0.2": any loopback address can be bound).
  static Raw tcp(uint16_t port, const char* source = "127.0.0.1") {
    Raw r(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &from.sin_addr);
    if (::bind(r.fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) return r;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    r.ok_ = ::connect(r.fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
    return r;
  }
  Raw(Raw&& o) noexcept : fd_(std::exchange(o.fd_, -1)), ok_(o.ok_) {}
  ~Raw() { close(); }
  bool ok() const { return ok_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send(std::span<const uint8_t> bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  bool request(protocol::Command cmd, uint32_t engine = 0, uint32_t tensor = 0,
               std::span<const uint8_t> payload = {}) {
    return send(protocol::stream::encode_request(protocol::Header{static_cast<uint32_t>(cmd), engine, tensor},
                                                 payload));
  }
  // Only the prefix announcing `length` payload bytes.
  bool announce(protocol::Command cmd, uint32_t length) {
    const auto p =
        protocol::stream::encode_request_prefix(protocol::Header{static_cast<uint32_t>(cmd), 0, 0}, length);
    return send(p);
  }

  // The next answer's status (its payload is skipped); nullopt when the connection closed or nothing came in time.
  std::optional<uint32_t> answer(std::chrono::milliseconds timeout = 5000ms) {
    std::array<uint8_t, protocol::stream::kResponsePrefix> prefix{};
    if (!read_exact(prefix.data(), prefix.size(), timeout)) return std::nullopt;
    auto p = protocol::stream::decode_response_prefix(prefix, AISRV_MAX_PAYLOAD);
    if (!p) return std::nullopt;
    std::vector<uint8_t> skip(p->length);
    if (!read_exact(skip.data(), skip.size(), timeout)) return std::nullopt;
    return p->status;
  }

  // True when the server closed the connection (EOF or reset) within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd pfd{fd_, POLLIN, 0};
      const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
                                            .count());
      if (::poll(&pfd, 1, std::max(left, 1)) <= 0) continue;
      uint8_t b[256];
      const ssize_t n = ::recv(fd_, b, sizeof b, 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  explicit Raw(int fd) : fd_(fd) {}
  bool read_exact(uint8_t* p, size_t n, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    size_t got = 0;
    while (got < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t r = ::recv(fd_, p + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  int fd_ = -1;
  bool ok_ = false;
};

struct TestServer {
  explicit TestServer(std::vector<std::string> extra, bool tcp = true) {
    std::vector<std::string> args{AISRV_TEST_SERVER, "--listen", "unix:" + dir.file("s.sock"), "--engines", "1"};
    if (tcp) args.insert(args.end(), {"--listen", "tcp:127.0.0.1:0"});
    args.insert(args.end(), extra.begin(), extra.end());
    process = std::make_unique<test::ServerProcess>(args, dir.file("s.sock"));
    if (tcp) port = static_cast<uint16_t>(std::stoi(process->wait_log("listening on tcp:127\\.0\\.0\\.1:([0-9]+)")));
  }
  std::string unix_path() { return dir.file("s.sock"); }
  std::string unix_target() { return "unix:" + unix_path(); }
  client::Client admin() { return std::move(client::Client::connect(unix_target())).value(); }
  // A model of `layers` layers of `layer_ms` each on engine 0.
  void load(uint16_t layers, uint32_t layer_ms) {
    auto c = admin();
    REQUIRE(c.load_model(0, test::make_test_model(test::TestModelSpec{{4}, {4}, layers, layer_ms * 1000})).ok());
  }
  protocol::EngineStats stats() { return std::move(admin().server_stats()).value().engines.at(0); }

  test::TempDir dir;
  std::unique_ptr<test::ServerProcess> process;
  uint16_t port = 0;
};

// In a child process running as `uid`: opens up to `tries` connections to `path`, each sending GET_ID, and tells
// the parent, through `report`, how many were answered OK and how many ERROR_LIMIT; it holds them until `hold` is
// closed by the parent. Only system calls after fork() (the request bytes are encoded before).
struct UserProcess {
  UserProcess(uid_t uid, const std::string& path, int tries) {
    int rep[2], hold[2];
    REQUIRE(::pipe(rep) == 0);
    REQUIRE(::pipe(hold) == 0);
    const auto request = protocol::stream::encode_request(
        protocol::Header{static_cast<uint32_t>(protocol::Command::GET_ID), 0, 0}, {});
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(rep[0]);
      ::close(hold[1]);
      if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(2);
      uint32_t counts[2] = {0, 0};  // OK, ERROR_LIMIT
      for (int i = 0; i < tries; ++i) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ::_exit(3);
        if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
          continue;
        uint8_t prefix[protocol::stream::kResponsePrefix];
        size_t got = 0;
        while (got < sizeof prefix) {
          const ssize_t n = ::recv(fd, prefix + got, sizeof prefix - got, 0);
          if (n <= 0) break;
          got += static_cast<size_t>(n);
        }
        if (got < sizeof prefix) continue;
        uint32_t status = 0;
        std::memcpy(&status, prefix, sizeof status);  // the prefix starts with the status, little-endian
        if (status == 0) ++counts[0];
        else if (status == to_status(Errc::limit)) ++counts[1];
      }
      (void)!::write(rep[1], counts, sizeof counts);
      char c;
      (void)!::read(hold[0], &c, 1);  // until the parent closes its end
      ::_exit(0);
    }
    ::close(rep[1]);
    ::close(hold[0]);
    hold_fd = hold[1];
    REQUIRE(::read(rep[0], counts, sizeof counts) == static_cast<ssize_t>(sizeof counts));
    ::close(rep[0]);
  }
  ~UserProcess() {
    ::close(hold_fd);
    int st = 0;
    ::waitpid(pid, &st, 0);
  }
  pid_t pid = -1;
  int hold_fd = -1;
  uint32_t counts[2] = {0, 0};
};

const uint32_t kLimit = to_status(Errc::limit);
const uint32_t kCancelled = to_status(Errc::cancelled);

}  // namespace

TEST_CASE("a request trickled a byte at a time is dropped at its deadline, not kept alive by each byte") {
  // 8 MiB at 16 MiB/s = 0.5 s on top of the 1 s frame timeout: the deadline is 1.5 s after the first byte.
  TestServer s({"--frame-timeout", "1", "--min-transfer-rate", "16M"});
  auto r = Raw::tcp(s.port);
  REQUIRE(r.ok());
  const auto t0 = Clock::now();
  REQUIRE(r.announce(protocol::Command::SET_INPUT_TENSOR, 8u << 20));
  bool closed = false;
  while (!closed && seconds_since(t0) < 6) {
    const uint8_t byte = 0x11;
    if (!r.send({&byte, 1})) break;  // the server closed it
    closed = r.closed_within(200ms);
  }
  const double took = seconds_since(t0);
  MESSAGE("trickled connection closed after " << took << " s (deadline 1.5 s)");
  CHECK(took >= 1.3);
  CHECK(took < 3.5);
  CHECK(s.process->log().find("did not arrive within its deadline") != std::string::npos);
}

TEST_CASE("one peer's half-sent requests cannot make another peer's INFER fail") {
  // 64 MiB in all: one peer may hold 32 MiB; all TCP peers are one peer.
  TestServer s({"--max-receive-memory", "64M", "--frame-timeout", "30", "--min-transfer-rate", "1K"});
  s.load(1, 0);
  std::vector<Raw> attackers;
  int accepted = 0, refused = 0;
  for (int i = 0; i < 8; ++i) {
    auto r = Raw::tcp(s.port);
    REQUIRE(r.ok());
    REQUIRE(r.announce(protocol::Command::SET_INPUT_TENSOR, 16u << 20));
    const uint8_t some[64]{};
    (void)r.send(some);
    // A refused announcement is answered ERROR_LIMIT at once; an accepted one waits for its bytes.
    if (auto st = r.answer(300ms)) {
      CHECK(*st == kLimit);
      ++refused;
    } else {
      ++accepted;
    }
    attackers.push_back(std::move(r));
  }
  MESSAGE(accepted << " of 8 announced 16 MiB requests accepted, " << refused << " refused");
  CHECK(accepted == 2);  // 32 MiB: the TCP peers' share
  auto victim = s.admin();  // another peer (a Unix uid)
  int ok = 0;
  const std::vector<uint8_t> in{1, 2, 3, 4};
  for (int i = 0; i < 14; ++i) {
    std::vector<std::span<const uint8_t>> inputs{in};
    auto out = victim.infer(0, inputs);
    if (out && out->at(0) == test::expected_output(in, 4, 0)) ++ok;
  }
  CHECK(ok == 14);
}

TEST_CASE("connection limits: TCP peers are one pool whatever their address, admins keep reserved slots, refused "
          "connections are told ERROR_LIMIT") {
  TestServer s({"--max-connections", "10", "--reserved-connections", "4", "--max-connections-per-peer", "5"});
  std::vector<Raw> held;
  const char* sources[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
  for (int i = 0; i < 5; ++i) {
    auto r = Raw::tcp(s.port, sources[i % 3]);
    REQUIRE(r.ok());
    REQUIRE(r.request(protocol::Command::GET_ID));
    REQUIRE(r.answer() == 0u);
    held.push_back(std::move(r));
  }
  // The sixth TCP peer, from yet another "address": over the TCP pool's 5.
  {
    auto r = Raw::tcp(s.port, "127.0.0.4");
    REQUIRE(r.ok());
    REQUIRE(r.request(protocol::Command::GET_ID));
    CHECK(r.answer() == kLimit);
  }
  // root (this test) is admin over the Unix socket: it may use the reserved slots up to its own per-peer 5.
  for (int i = 0; i < 5; ++i) {
    auto r = Raw::unix_socket(s.unix_path());
    REQUIRE(r.ok());
    REQUIRE(r.request(protocol::Command::GET_ID));
    CHECK(r.answer() == 0u);
    held.push_back(std::move(r));
  }
  auto r = Raw::unix_socket(s.unix_path());
  REQUIRE(r.ok());
  REQUIRE(r.request(protocol::Command::GET_ID));
  CHECK(r.answer() == kLimit);
  CHECK(s.process->log().find("refused") != std::string::npos);
}

TEST_CASE("users take no reserved slot: with 6 user slots, the 7th TCP peer is refused while root still connects") {
  TestServer s({"--max-connections", "10", "--reserved-connections", "4", "--max-connections-per-peer", "64"});
  std::vector<Raw> held;
  for (int i = 0; i < 6; ++i) {
    auto r = Raw::tcp(s.port);
    REQUIRE(r.request(protocol::Command::GET_ID));
    REQUIRE(r.answer() == 0u);
    held.push_back(std::move(r));
  }
  auto seventh = Raw::tcp(s.port);
  REQUIRE(seventh.request(protocol::Command::GET_ID));
  CHECK(seventh.answer() == kLimit);
  auto admin = client::Client::connect(s.unix_target());
  REQUIRE(admin.ok());
  CHECK(admin->id().ok());
}

TEST_CASE("loopback TCP peers are users: no admin command without AUTH") {
  TestServer s({});
  CHECK(s.process->log().find("TCP peers are users") != std::string::npos);
  auto c = client::Client::connect("tcp:127.0.0.1:" + std::to_string(s.port));
  REQUIRE(c.ok());
  auto info = c->session_info();
  REQUIRE(info.ok());
  CHECK(info->role == protocol::Role::user);
  const auto model = test::make_test_model({});
  auto st = c->load_model(0, model);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == Errc::denied);
  CHECK(c->unload_model(0).error().code == Errc::denied);
  // The same client over the Unix socket (root) is admin.
  CHECK(s.admin().load_model(0, model).ok());
}

TEST_CASE("AUTH: a TCP peer is admin after the token; guesses are throttled; a link that must AUTH and does not "
          "is closed") {
  test::TempDir dir;
  const std::string token_file = dir.file("token");
  {
    std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  }
  ::chmod(token_file.c_str(), 0600);
  TestServer s({"--token-file", token_file, "--auth-timeout", "1"});
  const std::string target = "tcp:127.0.0.1:" + std::to_string(s.port);
  auto c = std::move(client::Client::connect(target)).value();
  const std::string good = "0123456789abcdef0123456789abcdef";
  auto bad = c.auth("wrong-token-wrong-token-wrong-token");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == Errc::denied);
  // At once again, even with the right token: throttled, the token not even looked at.
  auto throttled = c.auth(good);
  REQUIRE_FALSE(throttled.ok());
  CHECK(throttled.error().code == Errc::denied);
  // A new connection from the same address does not reset the wait.
  {
    auto c2 = std::move(client::Client::connect(target)).value();
    CHECK_FALSE(c2.auth(good).ok());
  }
  // Guessing in a loop: almost every attempt is refused without a comparison.
  int answered = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < 0.5) {
    (void)c.auth("guess-guess-guess-guess-guess-guess");
    ++answered;
  }
  std::this_thread::sleep_for(150ms);
  auto log_before = s.process->log();
  // After the wait (0.1 s after the first failure; the loop's attempts were refused without counting as failures)
  // the right token works.
  bool admitted = false;
  for (int i = 0; i < 40 && !admitted; ++i) {
    admitted = c.auth(good).ok();
    if (!admitted) std::this_thread::sleep_for(100ms);
  }
  CHECK(admitted);
  CHECK(c.session_info()->role == protocol::Role::admin);
  MESSAGE(answered << " AUTH attempts answered in 0.5 s");
  // A connection that never AUTHs is closed after --auth-timeout.
  auto idle = Raw::tcp(s.port);
  REQUIRE(idle.ok());
  const auto t1 = Clock::now();
  CHECK(idle.closed_within(4000ms));
  CHECK(seconds_since(t1) > 0.7);
}

TEST_CASE("two local users opening all the connections they can leave room for root and a third user") {
  // The probe: two users holding 128 connections each locked out root and everyone else. With the defaults (256
  // connections, 64 per peer, a peer is a uid) each gets 64.
  TestServer s({"--socket-mode", "0666"}, /*tcp=*/false);
  ::chmod(s.dir.path().c_str(), 0755);
  if (::geteuid() != 0) {
    MESSAGE("skipped: needs root to run clients as other uids");
    return;
  }
  UserProcess a(65534, s.unix_path(), 128);
  UserProcess b(65533, s.unix_path(), 128);
  MESSAGE("uid 65534: " << a.counts[0] << " OK, " << a.counts[1] << " ERROR_LIMIT; uid 65533: " << b.counts[0]
                        << " OK, " << b.counts[1] << " ERROR_LIMIT");
  CHECK(a.counts[0] == 64);
  CHECK(a.counts[1] > 0);
  CHECK(b.counts[0] == 64);
  CHECK(b.counts[1] > 0);
  UserProcess c(65532, s.unix_path(), 3);
  CHECK(c.counts[0] == 3);
  auto root = client::Client::connect(s.unix_target());
  REQUIRE(root.ok());
  CHECK(root->id().ok());
}

TEST_CASE("a TCP peer without the token cannot hold the TCP pool against one that has it") {
  test::TempDir dir;
  const std::string token_file = dir.file("token");
  {
    std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  }
  ::chmod(token_file.c_str(), 0600);
  TestServer s({"--token-file", token_file, "--auth-timeout", "30", "--max-connections-per-peer", "4"});
  const std::string target = "tcp:127.0.0.1:" + std::to_string(s.port);
  // The pool of TCP peers is full of links that never AUTH.
  std::vector<Raw> squatters;
  for (int i = 0; i < 4; ++i) {
    squatters.push_back(Raw::tcp(s.port));
    REQUIRE(squatters.back().ok());
  }
  std::this_thread::sleep_for(100ms);
  // The token holder still gets in (the oldest squatter makes room), and is admin.
  auto c = client::Client::connect(target);
  REQUIRE_MESSAGE(c.ok(), (c.ok() ? std::string() : c.error().message));
  REQUIRE(c->auth("0123456789abcdef0123456789abcdef").ok());
  CHECK(c->session_info()->role == protocol::Role::admin);
  CHECK(squatters[0].closed_within(2000ms));
  CHECK_FALSE(squatters[1].closed_within(100ms));
  // Authenticated links are never evicted: with 4 of them the pool is full for a newcomer.
  std::vector<client::Client> held;
  for (int i = 0; i < 3; ++i) {
    auto h = client::Client::connect(target);
    REQUIRE(h.ok());
    REQUIRE(h->auth("0123456789abcdef0123456789abcdef").ok());
    held.push_back(std::move(h).value());
  }
  auto late = Raw::tcp(s.port);
  REQUIRE(late.ok());
  REQUIRE(late.request(protocol::Command::GET_ID));
  CHECK(late.answer() == kLimit);
  CHECK(c->id().ok());
  CHECK(s.process->log().find("evicted") != std::string::npos);
}

TEST_CASE("connection churn writes a bounded number of log lines") {
  TestServer s({}, /*tcp=*/false);
  const size_t before = s.process->log().size();
  std::atomic<bool> stop{false};
  std::atomic<int> connects{0};
  std::vector<std::thread> churn;
  for (int t = 0; t < 4; ++t)
    churn.emplace_back([&] {
      while (!stop) {
        auto r = Raw::unix_socket(s.unix_path());
        if (r.ok()) ++connects;
      }
    });
  // Meanwhile root connects with a client library and is served.
  int served = 0;
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(250ms);
    auto c = client::Client::connect(s.unix_target());
    if (c && c->id().ok()) ++served;
  }
  stop = true;
  for (auto& t : churn) t.join();
  std::this_thread::sleep_for(300ms);
  const std::string added = s.process->log().substr(before);
  const auto lines = std::count(added.begin(), added.end(), '\n');
  MESSAGE(connects.load() << " connections in 1.5 s wrote " << lines << " log lines (" << added.size() << " bytes)");
  CHECK(connects > 200);
  CHECK(served == 6);
  CHECK(lines < 40);
}

TEST_CASE("a client that closes takes its queued and running requests with it") {
  TestServer s({}, /*tcp=*/false);
  s.load(20, 20);  // 0.4 s per inference
  {
    std::vector<Raw> clients;
    for (int i = 0; i < 8; ++i) {
      auto r = Raw::unix_socket(s.unix_path());
      REQUIRE(r.ok());
      REQUIRE(r.request(protocol::Command::START_INFER));
      clients.push_back(std::move(r));
    }
    std::this_thread::sleep_for(50ms);
  }  // all eight close
  std::this_thread::sleep_for(1000ms);
  const auto e = s.stats();
  MESSAGE("after 8 clients closed: " << e.inferences << " completed, " << e.cancelled << " cancelled");
  CHECK(e.inferences == 0);
  CHECK(e.cancelled >= 1);
  CHECK(e.queued == 0);
}

TEST_CASE("CANCEL_INFER overtakes the running request of its own connection; answers stay in order") {
  TestServer s({}, /*tcp=*/false);
  s.load(50, 20);  // 1 s
  auto r = Raw::unix_socket(s.unix_path());
  REQUIRE(r.ok());
  const auto t0 = Clock::now();
  REQUIRE(r.request(protocol::Command::START_INFER));
  std::this_thread::sleep_for(100ms);
  REQUIRE(r.request(protocol::Command::CANCEL_INFER, 0, AISRV_CANCEL_OWN));
  REQUIRE(r.request(protocol::Command::GET_ID));
  CHECK(r.answer() == kCancelled);  // START_INFER
  CHECK(r.answer() == 0u);          // CANCEL_INFER
  CHECK(r.answer() == 0u);          // GET_ID
  CHECK(seconds_since(t0) < 0.8);
}

TEST_CASE("--max-queued bounds the requests a connection pipelines") {
  TestServer s({"--max-queued", "1"}, /*tcp=*/false);
  s.load(5, 20);  // 0.1 s
  auto r = Raw::unix_socket(s.unix_path());
  REQUIRE(r.ok());
  std::vector<uint8_t> burst;
  for (int i = 0; i < 20; ++i) {
    auto f = protocol::stream::encode_request(
        protocol::Header{static_cast<uint32_t>(protocol::Command::START_INFER), 0, 0}, {});
    burst.insert(burst.end(), f.begin(), f.end());
  }
  REQUIRE(r.send(burst));
  int ok = 0, limit = 0;
  for (int i = 0; i < 20; ++i) {
    auto st = r.answer();
    REQUIRE(st.has_value());
    if (*st == 0) ++ok;
    if (*st == kLimit) ++limit;
  }
  MESSAGE(ok << " OK, " << limit << " ERROR_LIMIT of 20 pipelined START_INFERs with --max-queued 1");
  CHECK(ok >= 2);
  CHECK(limit >= 15);
  CHECK(ok + limit == 20);
}

TEST_CASE("shutdown: a request cancelled at the deadline is answered ERROR_CANCELLED") {
  TestServer s({"--shutdown-timeout", "0.5"}, /*tcp=*/false);
  s.load(50, 100);  // 5 s
  auto r = Raw::unix_socket(s.unix_path());
  REQUIRE(r.request(protocol::Command::START_INFER));
  std::this_thread::sleep_for(200ms);
  std::thread stopper([&] { s.process->stop(); });
  CHECK(r.answer(4000ms) == kCancelled);
  stopper.join();
}

TEST_CASE("shutdown does not wait for a half-sent request") {
  TestServer s({"--shutdown-timeout", "10"}, /*tcp=*/false);
  auto r = Raw::unix_socket(s.unix_path());
  REQUIRE(r.announce(protocol::Command::SET_INPUT_TENSOR, 1000));
  const uint8_t some[10]{};
  REQUIRE(r.send(some));
  std::this_thread::sleep_for(100ms);
  const auto t0 = Clock::now();
  CHECK(s.process->stop() == 0);
  MESSAGE("stopped in " << seconds_since(t0) << " s");
  CHECK(seconds_since(t0) < 3);
}

TEST_CASE("shutdown does not wait for refused connections") {
  TestServer s({"--max-connections-per-peer", "1"});
  auto held = Raw::tcp(s.port);
  REQUIRE(held.request(protocol::Command::GET_ID));
  REQUIRE(held.answer() == 0u);
  auto refused = Raw::tcp(s.port);  // refused; waits (up to 2 s) for a first request to answer ERROR_LIMIT
  REQUIRE(refused.ok());
  std::this_thread::sleep_for(200ms);
  const auto t0 = Clock::now();
  CHECK(s.process->stop() == 0);
  MESSAGE("stopped in " << seconds_since(t0) << " s with a refused connection waiting");
  CHECK(seconds_since(t0) < 1.2);
}
