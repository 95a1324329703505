// Integration test: aisrvd --metrics (docs/metrics.md) with a real CPU engine and the demo model. The page passes
// Debian's `promtool check metrics`; counters and histogram counts move by exactly the inferences run; /healthz
// answers; /readyz is 503 while an engine configured to boot a model (--boot 0, empty store) has none and 200 once
// one is loaded; hostile HTTP peers (oversized head, unknown method, garbage, a slowloris connection, more connections
// than the limit) get their answer or are cut off while inference goes on. The test server's engines (a test double
// whose inference fails on a poisoned input) show /readyz turning 503 when an engine fails and 200 when it recovers.
#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>
#include <sys/un.h>

#include <cstdlib>
#include <fstream>
#include <thread>
#include <map>
#include <sstream>

#include "aisrv/client/client.hpp"
#include "demo_model.hpp"
#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Reply {
  unsigned status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
};

Reply request(uint16_t port, http::verb method, const std::string& target) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(30));
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(false);
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  parser.skip(method == http::verb::head);
  http::read(stream, buffer, parser);
  Reply r;
  r.status = parser.get().result_int();
  r.body = parser.get().body();
  for (const auto& f : parser.get()) r.headers[std::string(f.name_string())] = std::string(f.value());
  return r;
}

Reply get(uint16_t port, const std::string& target) { return request(port, http::verb::get, target); }

// Sends raw bytes on a fresh connection and returns everything the server answers until it closes.
std::string raw_exchange(uint16_t port, const std::string& bytes) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(30));
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  beast::error_code ec;
  asio::write(stream, asio::buffer(bytes), ec);
  std::string out;
  char buf[4096];
  for (;;) {
    const size_t n = stream.read_some(asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

// The value of the series `series` (name with its labels exactly as printed), or -1 when the page lacks it.
double value_of(const std::string& page, const std::string& series) {
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

// `promtool check metrics` on the page; an empty optional when promtool is not installed.
std::optional<test::RunResult> promtool_check(const std::string& page) {
  if (::access("/usr/bin/promtool", X_OK) != 0) return std::nullopt;
  return test::run({"/usr/bin/promtool", "check", "metrics"}, std::chrono::seconds(60), {}, page);
}

void check_promtool(const std::string& page) {
  auto r = promtool_check(page);
  if (!r) {
    MESSAGE("SKIPPED the promtool check: /usr/bin/promtool is not installed (Debian package prometheus; "
            "tools/install-deps installs it)");
    return;
  }
  INFO(r->out << r->err << "\n" << page);
  CHECK(r->exit_code == 0);
  CHECK(r->out + r->err == "");  // no lint complaints either
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in, path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint16_t metrics_port(const test::ServerProcess& p) {
  return static_cast<uint16_t>(std::stoi(p.wait_log(R"(metrics and health probes on http://127\.0\.0\.1:(\d+))")));
}

client::Client connect(const std::string& sock) {
  auto c = client::Client::connect("unix:" + sock);
  REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().what()));
  return std::move(c).value();
}

}  // namespace

TEST_CASE("aisrvd --metrics: readiness follows the boot engine's model, counters move by exactly the work done") {
  test::TempDir dir;
  const std::string sock = dir.file("s.sock");
  test::ServerProcess d({AISRVD, "--listen", "unix:" + sock, "--engine", "0=cpu", "--flash", dir.file("flash.img"),
                         "--flash-size", "1M", "--flash-erase-block", "64K", "--boot", "0", "--metrics",
                         "tcp:127.0.0.1:0", "--metrics-timeout", "5", "--metrics-max-connections", "4"},
                        sock);
  const uint16_t port = metrics_port(d);

  // Alive, but not ready: engine 0 must boot a model and the store has none.
  Reply health = get(port, "/healthz");
  CHECK(health.status == 200);
  CHECK(health.body == "ok\n");
  Reply ready = get(port, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("engine 0 (cpu)") != std::string::npos);
  CHECK(ready.body.find("no model loaded") != std::string::npos);
  std::string page = get(port, "/metrics").body;
  CHECK(value_of(page, "aisrv_ready") == 0);
  CHECK(value_of(page, R"(aisrv_engine_ready{engine="0",kind="cpu"})") == 0);
  CHECK(value_of(page, R"(aisrv_model_loaded{engine="0"})") == 0);
  check_promtool(page);

  auto c = connect(sock);
  const auto model = demo::build_digit_model();
  REQUIRE(c.load_model(0, model).ok());
  ready = get(port, "/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.body == "ready: 1 engine\n");

  const std::string before = get(port, "/metrics").body;
  CHECK(value_of(before, "aisrv_ready") == 1);
  CHECK(value_of(before, R"x(aisrv_model_info{engine="0",format="tflite",source="wire (external)"})x") == 1);
  CHECK(value_of(before, R"(aisrv_model_bytes{engine="0"})") == static_cast<double>(model.size()));
  CHECK(value_of(before, R"(aisrv_sessions_open{transport="unix"})") == 1);
  constexpr int kRuns = 7;
  for (int i = 0; i < kRuns; ++i) {
    const auto digit = demo::render_digit(i);
    const std::span<const uint8_t> in(reinterpret_cast<const uint8_t*>(digit.data()), digit.size());
    auto out = c.infer(0, std::span<const std::span<const uint8_t>>(&in, 1));
    REQUIRE(out.ok());
    std::vector<int8_t> scores(out->at(0).begin(), out->at(0).end());
    CHECK(demo::argmax(scores) == i);
  }
  const std::string after = get(port, "/metrics").body;
  auto delta = [&](const std::string& series) { return value_of(after, series) - value_of(before, series); };
  CHECK(delta(R"(aisrv_inferences_total{engine="0",result="completed"})") == kRuns);
  CHECK(delta(R"(aisrv_inferences_total{engine="0",result="failed"})") == 0);
  CHECK(delta(R"(aisrv_compute_seconds_count{engine="0"})") == kRuns);
  CHECK(delta(R"(aisrv_compute_seconds_bucket{engine="0",le="+Inf"})") == kRuns);
  CHECK(delta(R"(aisrv_queue_wait_seconds_count{engine="0"})") == kRuns);
  CHECK(delta(R"(aisrv_transfer_seconds_count{engine="0"})") == kRuns);
  CHECK(delta(R"(aisrv_requests_total{status="OKAY"})") == kRuns);
  CHECK(delta(R"(aisrv_requests_total{status="ERROR_NO_MODEL"})") == 0);
  CHECK(delta(R"(aisrv_request_payload_bytes_total{transport="unix"})") >= kRuns * 28 * 28);
  CHECK(delta(R"(aisrv_response_payload_bytes_total{transport="unix"})") >= kRuns * 10);
  CHECK(value_of(after, R"(aisrv_compute_seconds_sum{engine="0"})") > 0);
  // The 10 s bucket of every histogram holds all of this run's inferences (cumulative buckets).
  CHECK(value_of(after, R"(aisrv_compute_seconds_bucket{engine="0",le="10"})") ==
        value_of(after, R"(aisrv_compute_seconds_count{engine="0"})"));
  check_promtool(after);
  // Every family on the page is documented (docs/metrics.md names each in backquotes).
  const std::string docs = read_text(std::string(AISRV_DOCS_DIR) + "/metrics.md");
  std::istringstream types(after);
  int families = 0;
  for (std::string line; std::getline(types, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    const std::string name = line.substr(7, line.find(' ', 7) - 7);
    ++families;
    CHECK_MESSAGE(docs.find("`" + name + "`") != std::string::npos, name << " is not in docs/metrics.md");
  }
  CHECK(families == 18);

  // An error answer is counted under its status.
  CHECK_FALSE(c.start_inference(7).ok());
  CHECK(value_of(get(port, "/metrics").body, R"(aisrv_requests_total{status="ERROR_BAD_ENGINE"})") -
            value_of(after, R"(aisrv_requests_total{status="ERROR_BAD_ENGINE"})") ==
        1);

  SUBCASE("hostile HTTP peers do not disturb serving") {
    // HEAD: the headers of GET, no body.
    Reply head = request(port, http::verb::head, "/metrics");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(std::stoul(head.headers["Content-Length"]) > 1000);
    CHECK(request(port, http::verb::post, "/metrics").status == 405);
    CHECK(request(port, http::verb::delete_, "/readyz").status == 405);
    CHECK(get(port, "/").status == 404);
    CHECK(get(port, "/metrics?name=x").status == 200);
    CHECK(raw_exchange(port, "BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 405", 0) == 0);
    CHECK(raw_exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'a') +
                                 "\r\n\r\n")
              .rfind("HTTP/1.1 431", 0) == 0);
    CHECK(raw_exchange(port, "\x16\x03\x01 not http at all\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);

    // Slowloris: a head that never ends is cut off at --metrics-timeout; meanwhile inference and probes go on.
    asio::io_context io;
    std::vector<std::unique_ptr<tcp::socket>> slow;
    for (int i = 0; i < 4; ++i) {  // the limit (--metrics-max-connections 4)
      slow.push_back(std::make_unique<tcp::socket>(io));
      slow.back()->connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
      asio::write(*slow.back(), asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: slow\r\n")));
    }
    // A fifth connection is closed at once (no answer), and serving goes on.
    std::string refused;
    CHECK_NOTHROW(refused = raw_exchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    CHECK(refused.find("200 OK") == std::string::npos);
    const auto digit = demo::render_digit(3);
    const std::span<const uint8_t> in(reinterpret_cast<const uint8_t*>(digit.data()), digit.size());
    CHECK(c.infer(0, std::span<const std::span<const uint8_t>>(&in, 1)).ok());
    // Each slow connection is closed by the server (read ends) without an answer.
    for (auto& s : slow) {
      beast::error_code ec;
      char buf[256];
      size_t got = 0;
      for (;;) {
        got += s->read_some(asio::buffer(buf), ec);
        if (ec) break;
      }
      CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
      CHECK(got == 0);
    }
    CHECK(get(port, "/healthz").status == 200);
    CHECK(get(port, "/readyz").status == 200);
  }
  CHECK(d.stop() == 0);
}

TEST_CASE("test server --metrics: /readyz is 503 while an engine fails and 200 when it recovers") {
  test::TempDir dir;
  const std::string sock = dir.file("s.sock");
  test::ServerProcess d({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--engines", "2", "--metrics",
                         "tcp:127.0.0.1:0"},
                        sock);
  const uint16_t port = metrics_port(d);
  CHECK(get(port, "/readyz").status == 200);  // no engine is configured to boot a model
  auto c = connect(sock);
  for (uint32_t e : {0u, 1u}) REQUIRE(c.load_model(e, test::make_test_model({})).ok());
  const std::vector<uint8_t> good{1, 2, 3, 4}, poisoned{0xEE, 0, 0, 0};
  auto run = [&](uint32_t engine, const std::vector<uint8_t>& input) {
    const std::span<const uint8_t> in(input);
    return c.infer(engine, std::span<const std::span<const uint8_t>>(&in, 1)).ok();
  };
  CHECK(run(1, good));
  // The backend's inference fails (as a Hailo-8 whose device went away does): engine 1 is not ready.
  CHECK_FALSE(run(1, poisoned));
  Reply ready = get(port, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("engine 1 (test): failing: its last inference failed: poisoned input") != std::string::npos);
  CHECK(ready.body.find("engine 0") == std::string::npos);
  std::string page = get(port, "/metrics").body;
  CHECK(value_of(page, R"(aisrv_engine_ready{engine="1",kind="test"})") == 0);
  CHECK(value_of(page, R"(aisrv_engine_ready{engine="0",kind="test"})") == 1);
  CHECK(value_of(page, R"(aisrv_inferences_total{engine="1",result="failed"})") == 1);
  CHECK(value_of(page, R"(aisrv_requests_total{status="ERROR_INFER_ERR"})") == 1);
  check_promtool(page);
  // A completed inference clears it.
  CHECK(run(1, good));
  CHECK(get(port, "/readyz").status == 200);
  // So does loading a model again after a failure.
  CHECK_FALSE(run(0, poisoned));
  CHECK(get(port, "/readyz").status == 503);
  REQUIRE(c.load_model(0, test::make_test_model({})).ok());
  CHECK(get(port, "/readyz").status == 200);
  CHECK(d.stop() == 0);
}

TEST_CASE("systemd watchdog: WATCHDOG=1 while the engines' queues answer, none while an engine is stuck") {
  test::TempDir dir;
  const std::string notify = dir.file("notify"), sock = dir.file("s.sock");
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", notify.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto next_ping = [fd] {
    char buf[512];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      if (std::string(buf, static_cast<size_t>(n)) == "WATCHDOG=1") return true;
    }
  };
  // The server inherits these (systemd sets them for a unit with WatchdogSec=): a ping every 100 ms.
  ::setenv("NOTIFY_SOCKET", notify.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);
  test::ServerProcess d({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--engines", "1"}, sock);
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  for (int i = 0; i < 3; ++i) CHECK(next_ping());
  d.wait_log("systemd watchdog: WATCHDOG=1 every 100 ms");

  // An inference that takes 3 s holds the engine's turn: the liveness probe queued behind it cannot run.
  auto c = connect(sock);
  test::TestModelSpec slow;
  slow.layers = 1;
  slow.delay_us = 3'000'000;
  REQUIRE(c.load_model(0, test::make_test_model(slow)).ok());
  std::thread busy([&c] {
    const std::vector<uint8_t> input{1, 2, 3, 4};
    const std::span<const uint8_t> in(input);
    CHECK(c.infer(0, std::span<const std::span<const uint8_t>>(&in, 1)).ok());
  });
  CHECK_NOTHROW(d.wait_log("systemd watchdog: not pinged"));
  busy.join();
  CHECK_NOTHROW(d.wait_log("systemd watchdog: the engines' queues answer again"));
  CHECK(next_ping());
  CHECK(d.stop() == 0);
  ::close(fd);
}

TEST_CASE("docs/metrics.md: the example alert rules pass promtool check rules") {
  const std::string docs = read_text(std::string(AISRV_DOCS_DIR) + "/metrics.md");
  const size_t section = docs.find("## Example alert rules");
  REQUIRE(section != std::string::npos);
  const size_t begin = docs.find("```yaml\n", section);
  REQUIRE(begin != std::string::npos);
  const size_t end = docs.find("```", begin + 8);
  REQUIRE(end != std::string::npos);
  const std::string rules = docs.substr(begin + 8, end - begin - 8);
  CHECK(rules.find("aisrv_ready") != std::string::npos);
  if (::access("/usr/bin/promtool", X_OK) != 0) {
    MESSAGE("SKIPPED: /usr/bin/promtool is not installed (Debian package prometheus; tools/install-deps installs it)");
    return;
  }
  test::TempDir dir;
  const std::string file = dir.file("aisrv-rules.yml");
  std::ofstream(file) << rules;
  const auto r = test::run({"/usr/bin/promtool", "check", "rules", file});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("SUCCESS: 4 rules found") != std::string::npos);
}
