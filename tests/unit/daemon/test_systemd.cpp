// Unit tests: aisrvd under systemd (aisrv/daemon/systemd.cpp) — readiness and stopping notifications on
// $NOTIFY_SOCKET, listening sockets taken from LISTEN_FDS/LISTEN_PID (and the variables unset), and the journal
// logger chosen when $JOURNAL_STREAM names stderr, whose lines carry syslog priorities. The journal part listens on
// /run/systemd/journal/socket itself where no journald owns it (containers, CI); beside a real journald it checks
// only the choice of sink.
#include <doctest/doctest.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "process.hpp"
#include "systemd.hpp"

using namespace aisrv;

namespace {

int bound_datagram_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string receive(int fd) {
  char buf[4096];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

TEST_CASE("READY=1 and STOPPING=1 go to $NOTIFY_SOCKET; without it nothing happens") {
  ::unsetenv("NOTIFY_SOCKET");
  daemon::notify_ready("nobody listens");  // no socket: a no-op
  test::TempDir dir;
  const std::string path = dir.file("notify");
  const int fd = bound_datagram_socket(path);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  daemon::notify_ready("serving 2 engines");
  const std::string ready = receive(fd);
  CHECK(ready.find("READY=1") != std::string::npos);
  CHECK(ready.find("STATUS=serving 2 engines") != std::string::npos);
  daemon::notify_stopping();
  CHECK(receive(fd).find("STOPPING=1") != std::string::npos);
  ::unsetenv("NOTIFY_SOCKET");
  ::close(fd);
}

TEST_CASE("socket activation: the passed descriptors for this pid, then the variables are gone") {
  ::setenv("LISTEN_FDS", "2", 1);
  ::setenv("LISTEN_PID", std::to_string(::getpid() + 1).c_str(), 1);  // meant for another process
  CHECK(daemon::take_listen_fds().empty());
  // As systemd passes them: descriptors 3 and 4 (made here from two sockets when the test process has them free).
  const bool free = ::fcntl(3, F_GETFD) < 0 && ::fcntl(4, F_GETFD) < 0;
  if (!free) {
    MESSAGE("descriptors 3 and 4 are in use in this process: the passing itself is not checked");
    return;
  }
  for (int target : {3, 4}) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (s == target) continue;  // the lowest free descriptor may already be the one wanted
    REQUIRE(::dup2(s, target) == target);
    ::close(s);
  }
  ::setenv("LISTEN_FDS", "2", 1);
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  const auto fds = daemon::take_listen_fds();
  CHECK(fds == std::vector<int>{3, 4});
  CHECK((::fcntl(3, F_GETFD) & FD_CLOEXEC) != 0);  // not leaked into children
  CHECK(std::getenv("LISTEN_FDS") == nullptr);
  CHECK(std::getenv("LISTEN_PID") == nullptr);
  CHECK(daemon::take_listen_fds().empty());  // not activated (any more)
  ::close(3);
  ::close(4);
}

TEST_CASE("stderr on the journal: lines go through sd_journal with syslog priorities") {
  ::unsetenv("JOURNAL_STREAM");
  CHECK_FALSE(daemon::stderr_is_journal());
  auto plain = daemon::make_logger("test-plain");
  CHECK(std::dynamic_pointer_cast<spdlog::sinks::systemd_sink_mt>(plain->sinks().at(0)) == nullptr);
  spdlog::drop("test-plain");

  struct stat st {};
  REQUIRE(::fstat(STDERR_FILENO, &st) == 0);
  ::setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str(), 1);
  CHECK_FALSE(daemon::stderr_is_journal());  // another stream: not ours
  ::setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(), 1);
  CHECK(daemon::stderr_is_journal());

  // Where no journald owns the socket (a container), listen there ourselves and read what the logger sends.
  const std::filesystem::path journal = "/run/systemd/journal/socket";
  int fd = -1;
  if (::geteuid() == 0 && !std::filesystem::exists(journal)) {
    std::filesystem::create_directories(journal.parent_path());
    fd = bound_datagram_socket(journal);
  }
  auto logger = daemon::make_logger("test-journal");
  CHECK(std::dynamic_pointer_cast<spdlog::sinks::systemd_sink_mt>(logger->sinks().at(0)) != nullptr);
  logger->warn("the store is 91% full");
  logger->error("engine 1: device gone");
  logger->flush();
  if (fd >= 0) {
    const std::string warn = receive(fd), error = receive(fd);
    CHECK_MESSAGE(warn.find("MESSAGE=the store is 91% full") != std::string::npos, warn);
    CHECK_MESSAGE(warn.find("PRIORITY=4") != std::string::npos, warn);
    CHECK_MESSAGE(error.find("PRIORITY=3") != std::string::npos, error);
    ::close(fd);
    std::filesystem::remove(journal);
  } else {
    MESSAGE("a journald owns /run/systemd/journal/socket (or not root): the lines went to it, unread here");
  }
  ::unsetenv("JOURNAL_STREAM");
}
