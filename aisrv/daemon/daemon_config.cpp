// aisrvd — engine, chain, group, mode and token-file argument parsing.
#include "daemon_config.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include <CLI/CLI.hpp>

#include "aisrv/protocol/limits.h"

namespace aisrv::daemon {

static Result<uint32_t> parse_number(std::string_view text, std::string_view what, std::string_view whole) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
    return make_error(Errc::invalid_argument, "'{}': {} '{}' is not a number", whole, what, text);
  return v;
}

Result<std::vector<engine::EngineSpec>> parse_engine_args(const std::vector<std::string>& args) {
  std::map<uint32_t, engine::EngineSpec> by_number;
  for (const auto& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos)
      return make_error(Errc::invalid_argument, "--engine '{}': expected N=KIND[:options], e.g. 0=cpu", a);
    const uint32_t n = AISRV_TRY(parse_number(std::string_view(a).substr(0, eq), "engine number", a));
    if (n >= AISRV_MAX_ENGINES)
      return make_error(Errc::invalid_argument, "--engine '{}': engine numbers go up to {}", a, AISRV_MAX_ENGINES - 1);
    auto spec = AISRV_TRY(engine::parse_engine_spec(std::string_view(a).substr(eq + 1)));
    if (!by_number.emplace(n, std::move(spec)).second)
      return make_error(Errc::invalid_argument, "--engine: engine {} is configured twice", n);
  }
  std::vector<engine::EngineSpec> specs;
  for (auto& [n, spec] : by_number) {
    if (n != specs.size())
      return make_error(Errc::invalid_argument, "--engine: engines must be numbered 0..N-1; engine {} is missing",
                        specs.size());
    specs.push_back(std::move(spec));
  }
  return specs;
}

Result<std::vector<std::pair<uint32_t, std::string>>> parse_engine_map(const std::vector<std::string>& args,
                                                                       std::string_view option,
                                                                       std::string_view example) {
  std::vector<std::pair<uint32_t, std::string>> sensors;
  for (const auto& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq + 1 == a.size())
      return make_error(Errc::invalid_argument, "{} '{}': expected N=VALUE, e.g. {}", option, a, example);
    const uint32_t n = AISRV_TRY(parse_number(std::string_view(a).substr(0, eq), "engine number", a));
    for (const auto& s : sensors)
      if (s.first == n) return make_error(Errc::invalid_argument, "{}: engine {} is given twice", option, n);
    sensors.emplace_back(n, a.substr(eq + 1));
  }
  return sensors;
}

Result<std::vector<std::pair<uint32_t, uint32_t>>> parse_chain_args(const std::vector<std::string>& args) {
  std::vector<std::pair<uint32_t, uint32_t>> chains;
  for (const auto& a : args) {
    const size_t colon = a.find(':');
    if (colon == std::string::npos)
      return make_error(Errc::invalid_argument, "--chain '{}': expected FROM:TO, e.g. 0:1", a);
    const uint32_t from = AISRV_TRY(parse_number(std::string_view(a).substr(0, colon), "engine", a));
    const uint32_t to = AISRV_TRY(parse_number(std::string_view(a).substr(colon + 1), "engine", a));
    chains.emplace_back(from, to);
  }
  return chains;
}

Result<uint32_t> parse_group(std::string_view text) {
  uint32_t gid = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), gid);
  if (!text.empty() && ec == std::errc() && ptr == text.data() + text.size()) return gid;
  const std::string name(text);
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  const int rc = ::getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found);
  if (rc != 0 || !found)
    return make_error(Errc::invalid_argument, "group '{}' does not exist{}", name,
                      rc ? fmt::format(" ({})", std::strerror(rc)) : "");
  return static_cast<uint32_t>(found->gr_gid);
}

namespace {
// A gid no process holds: (gid_t)-1 means "unchanged" to setgid()/setgroups() and is never assigned.
constexpr uint32_t kNoProcessGid = static_cast<uint32_t>(static_cast<gid_t>(-1));
// A group given by a name that the group database does not know (a number, or a lookup error, is not this case).
bool group_name_absent(const std::string& text) {
  uint32_t gid = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), gid);
  if (ec == std::errc() && ptr == text.data() + text.size()) return false;
  std::vector<char> buf(16384);
  group g{};
  group* found = nullptr;
  return ::getgrnam_r(text.c_str(), &g, buf.data(), buf.size(), &found) == 0 && found == nullptr;
}
}  // namespace

Result<uint32_t> parse_mode(std::string_view text) {
  uint32_t mode = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), mode, 8);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || mode > 0777)
    return make_error(Errc::invalid_argument, "'{}' is not a file mode (octal, e.g. 0660)", text);
  return mode;
}

Result<std::string> read_token_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return make_error(Errc::invalid_argument, "--token-file {}: {}", path, std::strerror(errno));
  struct stat st {};
  std::string token;
  Status problem = ok();
  if (::fstat(fd, &st) != 0) {
    problem = make_error(Errc::invalid_argument, "--token-file {}: {}", path, std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    problem = make_error(Errc::invalid_argument, "--token-file {} is not a regular file", path);
  } else if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    problem = make_error(Errc::invalid_argument, "--token-file {} belongs to uid {}, not to this daemon's user ({}) "
                                                 "or root",
                         path, st.st_uid, ::geteuid());
  } else if (st.st_mode & 0077) {
    problem = make_error(Errc::invalid_argument, "--token-file {} can be read or written by group or others (mode "
                                                 "{:04o}); chmod 600 it",
                         path, st.st_mode & 07777);
  } else if (st.st_size > static_cast<off_t>(AISRV_MAX_TOKEN) + 2) {
    problem = make_error(Errc::invalid_argument, "--token-file {} is {} bytes; a token is at most {}", path,
                         st.st_size, AISRV_MAX_TOKEN);
  } else {
    token.resize(static_cast<size_t>(st.st_size));
    const ssize_t n = ::read(fd, token.data(), token.size());
    if (n < 0) problem = make_error(Errc::invalid_argument, "--token-file {}: {}", path, std::strerror(errno));
    token.resize(n < 0 ? 0 : static_cast<size_t>(n));
  }
  ::close(fd);
  AISRV_TRY(std::move(problem));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.size() < 16 || token.size() > AISRV_MAX_TOKEN)
    return make_error(Errc::invalid_argument, "--token-file {}: the token is {} bytes; use 16..{} random bytes (e.g. "
                                              "openssl rand -hex 32 > FILE)",
                      path, token.size(), AISRV_MAX_TOKEN);
  return token;
}

void add_client_options(CLI::App& app, ClientOptions& o) {
  app.add_option("--max-connections", o.max_connections,
                 "Socket connections open at once; more are refused (answered ERROR_LIMIT, logged) (default 256)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--reserved-connections", o.reserved_connections,
                 "Of --max-connections, slots only admins (root, the daemon's user, --admin-group) may take, so "
                 "other users cannot lock them out (default: a sixteenth, 16 of 256)")
      ->check(CLI::Range(0, 65536));
  app.add_option("--max-connections-per-peer", o.max_per_peer,
                 "Socket connections one Unix user may hold; all TCP peers together count as one peer (default 64)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--frame-timeout", o.frame_timeout_s,
                 "Seconds a request may take to arrive, and an answer to be read, on top of its length at "
                 "--min-transfer-rate; then the connection is dropped (default 10)")
      ->check(CLI::Range(0.01, 86400.0));
  app.add_option("--min-transfer-rate", o.min_transfer_rate,
                 "Bytes per second a request's payload and an answer must at least move at (size: 64K, 1M; "
                 "default 1M): a 64 MiB request must arrive within --frame-timeout + 64 s, however it trickles");
  app.add_option("--auth-timeout", o.auth_timeout_s,
                 "Seconds a connection that must AUTH (TCP with --token-file) may stay without doing it; 0 never "
                 "(default 10). When its pool is full, the oldest such connection is evicted for a newcomer")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--idle-timeout", o.idle_timeout_s,
                 "Seconds without a request before a connection is closed; 0 never (default 1800)")
      ->check(CLI::Range(0.0, 31536000.0));
  app.add_option("--max-receive-memory", o.max_receive,
                 "Payload bytes of requests being received or run on all connections together; a request above it is "
                 "answered ERROR_LIMIT and its connection closed (default 512M; the last eighth is kept for requests "
                 "up to 1/128 of it)");
  app.add_option("--max-receive-memory-per-peer", o.max_receive_per_peer,
                 "One peer's share of --max-receive-memory (a Unix user; all TCP peers together) (default: half)");
  app.add_option("--session-memory", o.session_memory,
                 "Tensor bytes one session (connection) may hold: its inputs, outputs and frames (default 256M)");
  app.add_option("--max-queued", o.max_queued,
                 "Requests one session may have waiting (pipelined on its connection or queued for an engine) behind "
                 "the one that runs; more are answered ERROR_LIMIT without running (default 16)")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--socket-mode", o.socket_mode, "Mode of Unix socket files (octal, default 0660)");
  app.add_option("--socket-group", o.socket_group,
                 "Group of Unix socket files and of the socket directory the daemon creates (name or gid)");
  app.add_option("--admin-group", o.admin_group,
                 "Unix peers in this group (and root and the daemon's user) are admins: they may load models, write "
                 "or erase the store, start streams and cancel others' inferences; the rest may only use them. "
                 "Without it every peer that can open the socket is admin; a group name that does not exist leaves "
                 "only root and the daemon's user admins (with a warning)");
  app.add_flag("--allow-remote", o.allow_remote,
               "Let TCP listen on non-loopback addresses (needs --token-file; the link is not encrypted)");
  app.add_option("--token-file", o.token_file,
                 "Shared secret every TCP session must send with AUTH first (a file of 16..256 bytes only this user "
                 "can read)");
  app.add_option("--shutdown-timeout", o.shutdown_timeout_s,
                 "Seconds SIGTERM/SIGINT waits for requests in flight before cancelling running inferences "
                 "(default 10; the process exits with 3 if even that does not end them)")
      ->check(CLI::Range(0.0, 3600.0));
}

Status apply_client_options(const ClientOptions& o, ServeOptions& serve) {
  auto& so = serve.socket;
  so.max_connections = o.max_connections;
  so.max_connections_per_peer = o.max_per_peer;
  if (o.reserved_connections >= 0 && static_cast<size_t>(o.reserved_connections) >= o.max_connections)
    return make_error(Errc::invalid_argument, "--reserved-connections {} must be below --max-connections {}",
                      o.reserved_connections, o.max_connections);
  so.reserved_connections =
      o.reserved_connections >= 0 ? static_cast<size_t>(o.reserved_connections) : o.max_connections / 16;
  so.frame_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.frame_timeout_s * 1000));
  so.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.idle_timeout_s * 1000));
  so.auth_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.auth_timeout_s * 1000));
  auto receive = engine::parse_size(o.max_receive);
  if (!receive || *receive == 0)
    return make_error(Errc::invalid_argument, "--max-receive-memory '{}' is not a size", o.max_receive);
  so.max_receive_bytes = *receive;
  if (!o.max_receive_per_peer.empty()) {
    auto share = engine::parse_size(o.max_receive_per_peer);
    if (!share || *share == 0 || *share > *receive)
      return make_error(Errc::invalid_argument,
                        "--max-receive-memory-per-peer '{}' must be a size from 1 to --max-receive-memory ({})",
                        o.max_receive_per_peer, *receive);
    so.max_receive_bytes_per_peer = *share;
  }
  auto rate = engine::parse_size(o.min_transfer_rate);
  if (!rate || *rate == 0)
    return make_error(Errc::invalid_argument, "--min-transfer-rate '{}' is not a positive size (bytes per second)",
                      o.min_transfer_rate);
  so.min_transfer_rate = *rate;
  auto mode = parse_mode(o.socket_mode);
  if (!mode) return make_error(Errc::invalid_argument, "--socket-mode: {}", mode.error().message);
  so.socket_mode = *mode;
  if (!o.socket_group.empty()) {
    auto g = parse_group(o.socket_group);
    if (!g) return make_error(Errc::invalid_argument, "--socket-group: {}", g.error().message);
    so.socket_group = *g;
  }
  so.allow_remote = o.allow_remote;
  if (!o.admin_group.empty()) {
    auto g = parse_group(o.admin_group);
    if (g) {
      serve.access.admin_gid = *g;
    } else if (group_name_absent(o.admin_group)) {
      // The shipped aisrvd.conf names aisrv-admins, which only the Debian package (sysusers) creates: an install
      // without it still starts, with the admin role closed to everyone but root and the daemon's own user
      // (no process holds gid (gid_t)-1). Never the other way round: a missing group grants nobody more.
      serve.access.admin_gid = kNoProcessGid;
      serve.notes.push_back(fmt::format(
          "--admin-group: group '{}' does not exist: only root and aisrvd's own user (uid {}) may change models "
          "and the store, every other peer is a user; create the group (systemd-sysusers with aisrv's "
          "sysusers.d/aisrv.conf, or groupadd --system {}) to make its members admins",
          o.admin_group, ::geteuid(), o.admin_group));
    } else {
      return make_error(Errc::invalid_argument, "--admin-group: {}", g.error().message);
    }
  }
  if (!o.token_file.empty()) {
    serve.access.token = AISRV_TRY(read_token_file(o.token_file));
  } else if (o.allow_remote) {
    return make_error(Errc::invalid_argument, "--allow-remote needs --token-file: remote peers must authenticate");
  }
  auto memory = engine::parse_size(o.session_memory);
  if (!memory || *memory == 0)
    return make_error(Errc::invalid_argument, "--session-memory '{}' is not a size", o.session_memory);
  serve.session.memory = *memory;
  serve.session.max_queued = o.max_queued;
  serve.shutdown_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_s * 1000));
  return ok();
}

}  // namespace aisrv::daemon
