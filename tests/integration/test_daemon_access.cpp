// Integration test: the daemon as a system service on a shared box — the socket directory and file permissions, TCP
// refused on non-loopback addresses without --allow-remote and a token, the token file's checks, AUTH, peer
// credentials in the log and the admin group with a real second user (when run as root), connection limits, the
// idle and frame timeouts, the receive-memory bound, and SIGTERM with queued and running work.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "aisrv/client/client.hpp"
#include "aisrv/protocol/stream_framing.hpp"
#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace std::chrono_literals;

namespace {

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// True when the server closed the connection (read returns 0 or fails) within the socket's receive timeout.
bool closed_by_server(int fd) {
  uint8_t b;
  const ssize_t n = ::recv(fd, &b, 1, 0);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::string write_token(test::TempDir& dir, const std::string& token, mode_t mode) {
  const std::string path = dir.file("token");
  std::ofstream(path) << token << "\n";
  ::chmod(path.c_str(), mode);
  return path;
}

test::RunResult run_server(std::vector<std::string> extra) {
  std::vector<std::string> args{AISRV_TEST_SERVER};
  args.insert(args.end(), extra.begin(), extra.end());
  return test::run(args, std::chrono::seconds(20));
}

}  // namespace

TEST_CASE("socket directory and file: created private, modes as configured, shared or foreign directories refused") {
  test::TempDir dir;
  {
    const std::string sock = dir.file("run/a.sock");
    test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock}, sock);
    CHECK(mode_of(dir.file("run")) == 0750);  // 0660 socket: the group may reach it
    CHECK(mode_of(sock) == 0660);
    CHECK(s.stop() == 0);
  }
  {
    const std::string sock = dir.file("private/b.sock");
    test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--socket-mode", "0600"}, sock);
    CHECK(mode_of(dir.file("private")) == 0700);
    CHECK(mode_of(sock) == 0600);
    CHECK(s.stop() == 0);
  }
  // a directory anyone may write (not sticky): another user could replace the socket
  std::filesystem::create_directory(dir.file("open"));
  ::chmod(dir.file("open").c_str(), 0777);
  auto r = run_server({"--listen", "unix:" + dir.file("open/c.sock")});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("writable by group or others") != std::string::npos);
  // a directory of another user (root can make one)
  if (::geteuid() == 0) {
    std::filesystem::create_directory(dir.file("theirs"));
    REQUIRE(::chown(dir.file("theirs").c_str(), 65534, 65534) == 0);
    r = run_server({"--listen", "unix:" + dir.file("theirs/d.sock")});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("belongs to uid 65534") != std::string::npos);
  }
  CHECK(run_server({"--listen", "unix:" + dir.file("e.sock"), "--socket-mode", "999"}).exit_code == 2);
  CHECK(run_server({"--listen", "unix:" + dir.file("e.sock"), "--socket-group", "no-such-group-x"}).exit_code == 2);
}

TEST_CASE("TCP: loopback only unless --allow-remote, which needs a token; AUTH with it") {
  test::TempDir dir;
  const std::string sock = dir.file("t.sock");
  auto r = run_server({"--listen", "unix:" + sock, "--listen", "tcp:0.0.0.0:0"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--allow-remote") != std::string::npos);
  r = run_server({"--listen", "unix:" + sock, "--listen", "tcp:0.0.0.0:0", "--allow-remote"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--allow-remote needs --token-file") != std::string::npos);
  const std::string token = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5";
  r = run_server({"--listen", "unix:" + sock, "--token-file", write_token(dir, token, 0644)});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("chmod 600") != std::string::npos);
  r = run_server({"--listen", "unix:" + sock, "--token-file", write_token(dir, "short", 0600)});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("16..256") != std::string::npos);

  const std::string token_file = write_token(dir, token, 0600);
  test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--listen", "tcp:0.0.0.0:0", "--allow-remote",
                         "--token-file", token_file},
                        sock);
  const std::string port = s.wait_log("listening on tcp:0\\.0\\.0\\.0:([0-9]+)");
  CHECK(s.log().find("NOT encrypted") != std::string::npos);
  const std::string target = "tcp:127.0.0.1:" + port;
  {
    auto c = client::Client::connect(target);  // no token: it may identify itself, nothing more
    REQUIRE(c.ok());
    CHECK(c->hello().ok());
    auto st = c->status(0);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == Errc::denied);
    CHECK(c->auth("wrong-token-0123456789").error().code == Errc::denied);
    std::this_thread::sleep_for(150ms);  // a failed AUTH makes this address wait 0.1 s before its next attempt
    CHECK(c->auth(token).ok());
    CHECK(c->status(0).ok());
    CHECK(c->session_info()->role == protocol::Role::admin);
  }
  {
    client::ConnectOptions o;
    o.token = token;
    auto c = client::Client::connect(target, o);
    REQUIRE(c.ok());
    CHECK(c->load_model(0, test::make_test_model({})).ok());
  }
  // the CLI takes the token from a file
  auto cli = test::run({AISRV_CLI, "--connect", target, "--token-file", token_file, "status"});
  CHECK_MESSAGE(cli.exit_code == 0, cli.err);
  cli = test::run({AISRV_CLI, "--connect", target, "status"});
  CHECK(cli.exit_code == 1);
  CHECK(cli.err.find("AUTH") != std::string::npos);
  // Unix sessions need no token
  auto u = client::Client::connect("unix:" + sock);
  REQUIRE(u.ok());
  CHECK(u->status(0).ok());
  CHECK(s.stop() == 0);
}

TEST_CASE("peer credentials: logged per connection; with --admin-group another user may use but not change models") {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);  // the other user must reach the socket
  const std::string sock = dir.file("p.sock");
  test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--socket-mode", "0666", "--admin-group",
                         "12345"},
                        sock);
  auto admin = client::Client::connect("unix:" + sock);
  REQUIRE(admin.ok());
  REQUIRE(admin->load_model(0, test::make_test_model({{4}, {4}})).ok());
  CHECK(s.log().find(fmt::format("(unix uid {} gid {} pid", ::geteuid(), ::getegid())) != std::string::npos);
  CHECK(admin->session_info()->role == protocol::Role::admin);  // the daemon's own user
  if (::geteuid() != 0) {
    MESSAGE("not root: the second-user half of this test needs to switch to uid 65534; skipped");
    CHECK(s.stop() == 0);
    return;
  }
  // A child process as nobody: a real second peer, whose role the server decides from SO_PEERCRED.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(10);
    auto c = client::Client::connect("unix:" + sock);
    if (!c) _exit(11);
    auto info = c->session_info();
    if (!info || info->role != protocol::Role::user || info->peer.find("uid 65534") == std::string::npos) _exit(12);
    auto load = c->load_model(0, test::make_test_model({{8}, {8}}));
    if (load || load.error().code != Errc::denied) _exit(13);
    if (load.error().message.find("admin role") == std::string::npos) _exit(14);
    const std::vector<uint8_t> in{1, 2, 3, 4};
    if (!c->set_input(0, 0, in) || !c->start_inference(0)) _exit(15);
    auto out = c->get_output(0, 0);
    if (!out || *out != test::expected_output(in, 4, 0)) _exit(16);
    if (c->cancel(0, true).error().code != Errc::denied) _exit(17);
    _exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK_MESSAGE(WEXITSTATUS(status) == 0, "second-user scenario failed at step " << WEXITSTATUS(status));
  CHECK(admin->tensor_info(0)->inputs[0].bytes == 4);  // the model stayed
  CHECK(s.log().find("(unix uid 65534 gid 65534") != std::string::npos);
  CHECK(s.stop() == 0);
}

TEST_CASE("--admin-group naming a group that does not exist: starts, warns, only root and the daemon's user are admin") {
  // The shipped aisrvd.conf names aisrv-admins, which only the Debian package creates (issue 26): an install without
  // the package must still start, and the missing group must grant nobody the admin role.
  const std::string group = "aisrv-test-no-such-group";
  REQUIRE(::getgrnam(group.c_str()) == nullptr);
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string sock = dir.file("g.sock");
  test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--socket-mode", "0666", "--admin-group", group},
                        sock);
  CHECK(s.log().find("group '" + group + "' does not exist: only root and aisrvd's own user") != std::string::npos);
  auto admin = client::Client::connect("unix:" + sock);
  REQUIRE(admin.ok());
  CHECK(admin->session_info()->role == protocol::Role::admin);  // the daemon's own user
  REQUIRE(admin->load_model(0, test::make_test_model({{4}, {4}})).ok());
  if (::geteuid() != 0) {
    MESSAGE("not root: the second-user half of this test needs to switch to uid 65534; skipped");
    CHECK(s.stop() == 0);
    return;
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(10);
    auto c = client::Client::connect("unix:" + sock);
    if (!c) _exit(11);
    auto info = c->session_info();
    if (!info || info->role != protocol::Role::user) _exit(12);
    auto load = c->load_model(0, test::make_test_model({{8}, {8}}));
    if (load || load.error().code != Errc::denied) _exit(13);
    _exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK_MESSAGE(WEXITSTATUS(status) == 0, "second-user scenario failed at step " << WEXITSTATUS(status));
  CHECK(admin->tensor_info(0)->inputs[0].bytes == 4);  // the model stayed
  CHECK(s.stop() == 0);
}

TEST_CASE("limits: connections in all and per peer, idle and frame timeouts, receive memory; others keep being served") {
  test::TempDir dir;
  const std::string sock = dir.file("l.sock");
  test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--max-connections", "6",
                         "--max-connections-per-peer", "4", "--idle-timeout", "0.6", "--frame-timeout", "0.4",
                         "--max-receive-memory", "1M"},
                        sock);
  // per peer: this test process is one peer (its uid)
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(connect_unix(sock));
  // The fifth is told why: its first request is answered ERROR_LIMIT, then it is closed.
  const int fifth = connect_unix(sock);
  const auto get_id = protocol::stream::encode_request(protocol::Header{0x10, 0, 0}, {});
  REQUIRE(::send(fifth, get_id.data(), get_id.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get_id.size()));
  uint8_t refusal[8];
  REQUIRE(::recv(fifth, refusal, 8, MSG_WAITALL) == 8);
  CHECK(aisrv_get_u32(refusal) == AISRV_STATUS_ERROR_LIMIT);
  CHECK(closed_by_server(fifth));
  ::close(fifth);
  CHECK(s.log().find("already has 4 connections open") != std::string::npos);
  for (int fd : fds) ::close(fd);
  fds.clear();
  std::this_thread::sleep_for(100ms);

  // idle: a connection that sends nothing is closed after the idle timeout; a busy one is not
  const int idle = connect_unix(sock);
  auto busy = client::Client::connect("unix:" + sock);
  REQUIRE(busy.ok());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(100ms);
    CHECK(busy->hello().ok());
  }
  CHECK(closed_by_server(idle));
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  ::close(idle);
  CHECK(s.log().find("idle timeout") != std::string::npos);

  // frame: a half-sent request is dropped
  const int half = connect_unix(sock);
  const auto prefix = protocol::stream::encode_request_prefix(protocol::Header{0x83, 0, 0}, 1000);
  REQUIRE(::send(half, prefix.data(), prefix.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(prefix.size()));
  REQUIRE(::send(half, prefix.data(), 10, MSG_NOSIGNAL) == 10);
  CHECK(closed_by_server(half));
  ::close(half);
  CHECK(s.log().find("did not arrive within its deadline") != std::string::npos);

  // receive memory: 1 MiB for everyone's requests in flight; a 2 MiB request is answered LIMIT and closed
  const int big = connect_unix(sock);
  const auto big_prefix = protocol::stream::encode_request_prefix(protocol::Header{0x86, 0, 0}, 2u << 20);
  REQUIRE(::send(big, big_prefix.data(), big_prefix.size(), MSG_NOSIGNAL) == 16);
  uint8_t answer[8];
  REQUIRE(::recv(big, answer, 8, MSG_WAITALL) == 8);
  CHECK(aisrv_get_u32(answer) == AISRV_STATUS_ERROR_LIMIT);
  CHECK(closed_by_server(big));
  ::close(big);
  // Everyone else is still served. (A new connection: `busy` may have been idle longer than the 0.6 s idle timeout
  // by now, on a loaded machine, and closed for that — rightly.)
  auto other = client::Client::connect("unix:" + sock);
  REQUIRE(other.ok());
  CHECK(other->hello().ok());
  CHECK(s.stop() == 0);
}

TEST_CASE("SIGTERM: queued requests answered cancelled at once, the running one finishes, clean exit") {
  test::TempDir dir;
  const std::string sock = dir.file("s.sock");
  test::ServerProcess s({AISRV_TEST_SERVER, "--listen", "unix:" + sock}, sock);
  {
    auto admin = client::Client::connect("unix:" + sock);
    REQUIRE(admin.ok());
    REQUIRE(admin->load_model(0, test::make_test_model({{4}, {4}, 4, 100000})).ok());  // 400 ms per inference
  }
  std::vector<std::thread> clients;
  std::vector<Errc> results(8, Errc::internal);
  std::vector<bool> ok(8, false);
  for (int i = 0; i < 8; ++i)
    clients.emplace_back([&, i] {
      client::ConnectOptions o;
      o.timeout = 20s;
      auto c = client::Client::connect("unix:" + sock, o);
      if (!c) return;
      c->set_fetch_error_details(false);
      auto st = c->start_inference(0);
      ok[static_cast<size_t>(i)] = st.ok();
      if (!st) results[static_cast<size_t>(i)] = st.error().code;
    });
  std::this_thread::sleep_for(150ms);  // all eight queued, the first one running
  const auto t0 = std::chrono::steady_clock::now();
  const int code = s.stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  for (auto& t : clients) t.join();
  CHECK(code == 0);
  CHECK(took < 2s);  // not 8 x 400 ms: the queued ones never ran
  int finished = 0, cancelled = 0;
  for (int i = 0; i < 8; ++i) {
    if (ok[static_cast<size_t>(i)]) ++finished;
    else if (results[static_cast<size_t>(i)] == Errc::cancelled) ++cancelled;
  }
  CHECK(finished == 1);
  CHECK(cancelled == 7);
  CHECK(s.log().find("SIGTERM received") != std::string::npos);

  // A running inference that outlives --shutdown-timeout is cancelled at the deadline.
  test::ServerProcess slow({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--shutdown-timeout", "0.3"}, sock);
  auto c = client::Client::connect("unix:" + sock);
  REQUIRE(c.ok());
  REQUIRE(c->load_model(0, test::make_test_model({{4}, {4}, 100, 100000})).ok());  // 10 s
  std::thread runner([&] {
    auto st = c->start_inference(0);
    CHECK_FALSE(st.ok());
  });
  std::this_thread::sleep_for(150ms);
  const auto t1 = std::chrono::steady_clock::now();
  CHECK(slow.stop() == 0);
  CHECK(std::chrono::steady_clock::now() - t1 < 3s);
  runner.join();
  CHECK(slow.log().find("cancelling the running inferences") != std::string::npos);
}

TEST_CASE("the CLI refuses a default socket another user owns (a squatter posing as aisrvd)") {
  if (::geteuid() != 0) {
    MESSAGE("not root: needs a second user to play the victim; skipped");
    return;
  }
  // The victim is uid 64999 without XDG_RUNTIME_DIR: its default socket is /tmp/aisrv-64999/aisrv.sock. Root (this
  // test) got there first.
  const std::string dir = "/tmp/aisrv-64999", sock = dir + "/aisrv.sock";
  std::filesystem::remove_all(dir);
  test::ServerProcess squatter({AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--socket-mode", "0666"}, sock);
  ::chmod(dir.c_str(), 0755);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(out[1], 2);
    if (::setgroups(0, nullptr) != 0 || ::setgid(64999) != 0 || ::setuid(64999) != 0) _exit(10);
    char* const argv[] = {const_cast<char*>(AISRV_CLI), const_cast<char*>("hello"), nullptr};
    char* const envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
    ::execve(AISRV_CLI, argv, envp);
    _exit(11);
  }
  ::close(out[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK_MESSAGE(WEXITSTATUS(status) == 3, err);
  CHECK(err.find("posing as aisrvd") != std::string::npos);
  CHECK(squatter.log().find("uid 64999") == std::string::npos);  // the victim never connected
  CHECK(squatter.stop() == 0);
  std::filesystem::remove_all(dir);
}
