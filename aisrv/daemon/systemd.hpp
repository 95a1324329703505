// aisrvd — running under systemd: readiness and stopping notifications (Type=notify, sd_notify), the watchdog
// (WatchdogSec=: WATCHDOG=1 pings, sent by the serving loop while the server's queues answer), the listening
// sockets systemd passes (socket activation, sd_listen_fds), and whether stderr goes to the journal (then the daemon
// logs with priorities through sd_journal). Outside systemd every call is a no-op and nothing is passed.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace aisrv::daemon {

// READY=1 with a STATUS line; STOPPING=1; a STATUS line alone. No-ops without $NOTIFY_SOCKET.
void notify_ready(const std::string& status);
void notify_stopping();
void notify_status(const std::string& status);

// The interval systemd expects a WATCHDOG=1 within (WatchdogSec=, passed as $WATCHDOG_USEC for this process);
// nothing when no watchdog is configured for this process.
std::optional<std::chrono::microseconds> watchdog_interval();
// WATCHDOG=1. A no-op without $NOTIFY_SOCKET.
void notify_watchdog();

// The listening sockets systemd passed (LISTEN_FDS / LISTEN_PID), in order; the variables are then unset so child
// processes do not see them. Empty when not socket-activated.
std::vector<int> take_listen_fds();

// True when stderr is connected to the journal (systemd sets $JOURNAL_STREAM to stderr's device and inode).
bool stderr_is_journal();

// The daemon's logger: to the journal with syslog priorities when stderr goes there, else coloured lines on stderr.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name);

}  // namespace aisrv::daemon
