// aisrv CLI — shared context: connection, error reporting, exit codes.
#include "cli_context.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "aisrv/protocol/endpoint.hpp"

namespace aisrv::cli {

int exit_code_for(Errc code) {
  switch (code) {
    case Errc::invalid_argument: return kUsage;
    case Errc::io_error:
    case Errc::timeout:
    case Errc::protocol_error:
    case Errc::incompatible:
    case Errc::not_found: return kNoConnection;
    default: return kServerError;
  }
}

std::string CliContext::system_target() {
  if (const char* env = std::getenv("AISRV_SYSTEM_SOCKET"); env && *env) return env;
  return "unix:/run/aisrv/aisrv.sock";
}

std::string CliContext::target() const {
  if (!used_target_.empty()) return used_target_;
  if (!options.connect.empty()) return options.connect;
  if (const char* env = std::getenv("AISRV_CONNECT"); env && *env) return env;
  return protocol::default_socket_target();
}

namespace {
// The default socket of a non-root user lives in a directory of that user (docs/security.md): one that belongs to
// someone else means another user may be posing as aisrvd, and nothing is sent there.
Status check_default_socket(const std::string& target) {
  if (::geteuid() == 0 || target != protocol::default_socket_target()) return ok();
  const std::string path = target.substr(5);
  const std::string dir = path.substr(0, path.rfind('/'));
  for (const std::string& p : {dir, path}) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // missing: connecting fails with its own message
    if (st.st_uid != ::geteuid())
      return make_error(Errc::io_error,
                        "{} belongs to uid {}, not to you (uid {}): another user may be posing as aisrvd; not "
                        "connecting (give --connect to talk to a server of another user on purpose)",
                        p, st.st_uid, ::geteuid());
  }
  return ok();
}
}  // namespace

Result<client::Client> CliContext::connect() const {
  AISRV_TRY(check_default_socket(target()));
  client::ConnectOptions co;
  co.timeout = std::chrono::milliseconds(options.timeout_ms);
  std::string token_file = options.token_file;
  if (token_file.empty())
    if (const char* env = std::getenv("AISRV_TOKEN_FILE"); env && *env) token_file = env;
  if (!token_file.empty()) co.token = AISRV_TRY(client::read_token_file(token_file));
  const std::string wanted = target();
  const std::string system = system_target();
  const char* env = std::getenv("AISRV_CONNECT");
  const bool chosen = !options.connect.empty() || (env && *env);
  struct stat st {};
  if (chosen || wanted == system || wanted.rfind("unix:", 0) != 0 || ::lstat(wanted.c_str() + 5, &st) == 0)
    return client::Client::connect(wanted, co);
  // No daemon of this user's own: the packaged service's socket (docs/cli.md), which is named when it fails too.
  auto c = client::Client::connect(system, co);
  if (!c)
    return make_error(c.error().code, "cannot connect to your own default socket {} (it does not exist) nor to the "
                      "system socket: {}", wanted, c.error().message);
  used_target_ = system;
  return c;
}

Result<client::Client*> CliContext::client() {
  if (!client_) client_.emplace(AISRV_TRY(connect()));
  return &*client_;
}

void CliContext::print_json(const nlohmann::json& j) const { std::cout << j.dump(2) << std::endl; }

void CliContext::run(const std::function<Status()>& body) {
  Status st = body();
  if (st) return;
  const Error& e = st.error();
  exit_code_ = exit_code_for(e.code);
  if (options.json) {
    print_json({{"error", {{"code", std::string(errc_name(e.code))}, {"message", e.message}}}});
  } else {
    std::cerr << "aisrv: " << e.message << " (" << errc_name(e.code) << ")" << std::endl;
  }
}

}  // namespace aisrv::cli
