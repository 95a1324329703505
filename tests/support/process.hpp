// aisrv tests — running programs from tests: capture output and exit code, run a server in the background and
// stop it with SIGTERM (its exit code then tells whether it shut down cleanly and, under ASan, leaked nothing).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace aisrv::test {

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

// Cross-built trees (tools/check --arch arm64) run their programs through qemu-user: AISRV_TEST_EMULATOR (set by
// ctest, e.g. "qemu-aarch64-static -cpu max -L /") is put in front of every program that is not
// the host's own (/usr, /bin, /sbin).
inline std::vector<std::string> with_emulator(std::vector<std::string> args) {
  const char* emu = std::getenv("AISRV_TEST_EMULATOR");
  if (!emu || !*emu || args.empty()) return args;
  for (const char* host : {"/usr/", "/bin/", "/sbin/"})
    if (args[0].rfind(host, 0) == 0) return args;
  std::vector<std::string> full;
  std::string word;
  for (const char* c = emu;; ++c) {
    if (*c == ' ' || *c == '\0') {
      if (!word.empty()) full.push_back(word);
      word.clear();
      if (!*c) break;
    } else {
      word += *c;
    }
  }
  // posix_spawn does not search PATH: find the emulator.
  if (!full.empty() && full[0].find('/') == std::string::npos)
    for (const char* dir : {"/usr/bin/", "/usr/local/bin/", "/bin/"})
      if (::access((std::string(dir) + full[0]).c_str(), X_OK) == 0) {
        full[0] = dir + full[0];
        break;
      }
  full.insert(full.end(), args.begin(), args.end());
  return full;
}

inline std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

inline int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs a program to completion (killed after `timeout`), capturing stdout and stderr; `env` entries "K=V" are added.
inline RunResult run(std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(60),
                     const std::vector<std::string>& env = {}, const std::string& stdin_text = {}) {
  args = with_emulator(std::move(args));
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) || pipe2(in_pipe, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());
  auto argv = argv_of(args);
  auto envp = argv_of(envs);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(in_pipe[1]);
    throw std::runtime_error("cannot start " + args[0]);
  }
  if (!stdin_text.empty()) (void)!write(in_pipe[1], stdin_text.data(), stdin_text.size());
  close(in_pipe[1]);
  RunResult r;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = decode_wait_status(status);
  return r;
}

// A background server process. stop() sends SIGTERM and returns its exit code (0 = clean shutdown).
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> args, std::string ready_socket) : socket_(std::move(ready_socket)) {
    args = with_emulator(std::move(args));
    const std::string log = std::filesystem::temp_directory_path() /
                            ("aisrv-server-" + std::to_string(getpid()) + "-" + std::to_string(counter()++) + ".log");
    log_path_ = log;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    auto argv = argv_of(args);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
      posix_spawn_file_actions_destroy(&fa);
      throw std::runtime_error("cannot start " + args[0]);
    }
    posix_spawn_file_actions_destroy(&fa);
    wait_ready();
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove(log_path_, ec);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }

  // SIGTERM, wait (up to `timeout`), return the exit code; the log is kept for log().
  int stop(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    exit_code_ = decode_wait_status(status);
    return exit_code_;
  }

  std::string log() const {
    std::string s;
    if (FILE* f = std::fopen(log_path_.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  }

  // Waits until the server's log matches `pattern` (e.g. its TCP port); returns the first match group.
  std::string wait_log(const std::string& pattern, std::chrono::seconds timeout = std::chrono::seconds(30)) const {
    const std::regex re(pattern);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("server log never matched '" + pattern + "':\n" + log());
  }

  // Resident set size of the server in KiB (from /proc).
  long rss_kib() const {
    FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/status").c_str(), "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    std::fclose(f);
    return kib;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  void wait_ready() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!alive()) throw std::runtime_error("server exited during start-up:\n" + log());
      if (accepts_connections(socket_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("server did not create " + socket_ + " within 30 s:\n" + log());
  }

  // Ready means listening: the socket file exists from bind() on, but connections succeed only after listen().
  static bool accepts_connections(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }

  pid_t pid_ = -1;
  std::string socket_;
  std::string log_path_;
  int exit_code_ = -1;
};

// A fresh private directory under the temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "aisrv-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace aisrv::test
