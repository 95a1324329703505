// Integration tests: aisrvd's command line, start-up refusals (exit 2 for configuration, 1 for start-up failures),
// socket-file handling (mode 0660, stale file replaced, live one refused, non-socket refused) and clean shutdown on
// SIGTERM and SIGINT (socket file removed, exit 0 — also no leaks under ASan).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <fstream>

#include "aisrv/client/client.hpp"
#include "process.hpp"

using namespace aisrv;
using test::run;

namespace {
test::RunResult daemon(std::vector<std::string> args) {
  args.insert(args.begin(), AISRV_DAEMON);
  return run(args, std::chrono::seconds(30));
}
}  // namespace

TEST_CASE("--version and --help") {
  auto r = daemon({"--version"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("aisrvd 0.1.0 (protocol 1.3)") != std::string::npos);
  r = daemon({"--help"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("cpu:") != std::string::npos);
  CHECK(r.out.find("hailo8:") != std::string::npos);
  CHECK(r.out.find("--chain") != std::string::npos);
}

TEST_CASE("configuration errors exit 2 and say what is wrong") {
  test::TempDir dir;
  const std::string l = "unix:" + dir.file("s.sock");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"--engine", "0=nope"}, "unknown engine kind 'nope'"},
      {{"--engine", "1=cpu"}, "engine 0 is missing"},
      {{"--engine", "0=cpu", "--engine", "0=cpu"}, "engine 0 is configured twice"},
      {{"--engine", "x=cpu"}, "is not a number"},
      {{"--engine", "0=cpu", "--chain", "0:5"}, "names an engine that does not exist"},
      {{"--engine", "0=cpu", "--engine", "1=cpu", "--chain", "0:1", "--chain", "1:0"}, "cycle"},
      {{"--engine", "0=cpu", "--chain", "01"}, "expected FROM:TO"},
      {{"--engine", "0=cpu", "--max-payload", "65M"}, "--max-payload must be"},
      {{"--engine", "0=cpu", "--max-payload", "12Q"}, "unknown size suffix"},
      {{"--engine", "0=cpu", "--sensor", "0=" + dir.file("missing.raw")}, "cannot open frame source"},
      {{"--engine", "0=cpu", "--sensor", "3=/dev/null"}, "sensor for engine 3, which does not exist"},
      {{"--engine", "0=cpu", "--listen", "udp:7"}, "expected unix:PATH"},
      {{"--log-level", "loud"}, "loud"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"--listen", l});
    CAPTURE(args.front() + " " + args[1]);
    auto r = daemon(args);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.err.find(c.says) != std::string::npos, r.err);
  }
  CHECK(!std::filesystem::exists(dir.file("s.sock")));
}

TEST_CASE("socket files: mode 0660, stale replaced, live and non-socket refused, removed on SIGTERM/SIGINT") {
  test::TempDir dir;
  const std::string path = dir.file("d.sock");
  // a stale socket file: bound, then the process that bound it is gone
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    ::close(fd);
  }
  REQUIRE(std::filesystem::is_socket(path));
  for (int sig : {SIGTERM, SIGINT}) {
    CAPTURE(sig);
    test::ServerProcess d({AISRV_DAEMON, "--engine", "0=cpu", "--listen", "unix:" + path}, path);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0660);
    auto c = client::Client::connect("unix:" + path);
    REQUIRE(c.ok());
    CHECK(c->hello().ok());
    // a second daemon on the same live socket is refused and the first keeps serving
    auto second = daemon({"--engine", "0=cpu", "--listen", "unix:" + path});
    CHECK(second.exit_code == 1);
    CHECK(second.err.find("in use by a running server") != std::string::npos);
    CHECK(c->hello().ok());
    ::kill(d.pid(), sig);
    const int code = d.stop();
    CHECK_MESSAGE(code == 0, d.log());
    CHECK(d.log().find("shutting down") != std::string::npos);
    CHECK(!std::filesystem::exists(path));
  }
  std::ofstream(dir.file("plain")) << "not a socket";
  auto r = daemon({"--engine", "0=cpu", "--listen", "unix:" + dir.file("plain")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is not a socket") != std::string::npos);
  CHECK(std::filesystem::is_regular_file(dir.file("plain")));
}

TEST_CASE("several listeners at once, TCP on loopback by default") {
  test::TempDir dir;
  const std::string path = dir.file("m.sock");
  test::ServerProcess d({AISRV_DAEMON, "--engine", "0=cpu", "--engine", "1=cpu", "--listen", "tcp:0", "--listen",
                         "unix:" + path},
                        path);
  const std::string tcp = d.wait_log("listening on (tcp:[0-9.]+:[0-9]+)");
  CHECK(tcp.rfind("tcp:127.0.0.1:", 0) == 0);
  for (const auto& target : {tcp, "unix:" + path}) {
    auto c = client::Client::connect(target);
    REQUIRE(c.ok());
    CHECK(c->server_version().engines == 2);
  }
  CHECK(d.stop() == 0);
}

TEST_CASE("--config: options from a file (TOML keys = long option names), the command line wins, bad keys refused") {
  test::TempDir dir;
  const std::string path = dir.file("c.sock");
  const std::string conf = dir.file("aisrvd.conf");
  std::ofstream(conf) << "# a service configuration\n"
                         "engine = [\"0=cpu\", \"1=cpu:kernels=ref\"]\n"
                         "listen = [\"unix:" + path + "\"]\n"
                         "max-queued = 3\n"
                         "session-memory = \"64M\"\n";
  {
    test::ServerProcess d({AISRV_DAEMON, "--config", conf, "--max-queued", "5"}, path);
    auto c = client::Client::connect("unix:" + path);
    REQUIRE(c.ok());
    CHECK(c->server_version().engines == 2);  // from the file
    auto who = c->session_info();
    REQUIRE(who.ok());
    CHECK(who->max_queued == 5);                     // the command line wins
    CHECK(who->memory_cap == 64ull * 1024 * 1024);  // from the file
    CHECK(d.stop() == 0);
  }
  std::ofstream(conf) << "engine = [\"0=cpu\"]\nno-such-option = 1\n";
  auto r = daemon({"--config", conf, "--listen", "unix:" + path});
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE((r.out + r.err).find("no-such-option") != std::string::npos, r.out << r.err);
  r = daemon({"--config", dir.file("missing.conf")});
  CHECK(r.exit_code == 2);
}
