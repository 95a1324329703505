// aisrvd — systemd readiness notification, socket activation and journald logging.
#include "systemd.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <cstring>

namespace aisrv::daemon {

void notify_ready(const std::string& status) {
  (void)sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
}

void notify_stopping() { (void)sd_notify(0, "STOPPING=1\nSTATUS=shutting down"); }

void notify_status(const std::string& status) { (void)sd_notifyf(0, "STATUS=%s", status.c_str()); }

std::optional<std::chrono::microseconds> watchdog_interval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec);
}

void notify_watchdog() { (void)sd_notify(0, "WATCHDOG=1"); }

std::vector<int> take_listen_fds() {
  std::vector<int> fds;
  const int n = sd_listen_fds(/*unset_environment=*/1);
  for (int i = 0; i < n; ++i) fds.push_back(SD_LISTEN_FDS_START + i);
  return fds;
}

bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js || !*js) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& name) {
  if (stderr_is_journal()) {
    // The journal stamps and prioritises each line itself: only the text.
    auto logger = std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::systemd_sink_mt>(name));
    logger->set_pattern("%v");
    return logger;
  }
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  return logger;
}

}  // namespace aisrv::daemon
