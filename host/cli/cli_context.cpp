// aisrv CLI — shared context: connection, error reporting, exit codes.
#include "cli_context.hpp"

#include <fmt/format.h>

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

std::string CliContext::target() const {
  if (!options.connect.empty()) return options.connect;
  if (const char* env = std::getenv("AISRV_CONNECT"); env && *env) return env;
  return protocol::default_socket_target();
}

Result<client::Client*> CliContext::client() {
  if (!client_) {
    client::ConnectOptions co;
    co.timeout = std::chrono::milliseconds(options.timeout_ms);
    std::string token_file = options.token_file;
    if (token_file.empty())
      if (const char* env = std::getenv("AISRV_TOKEN_FILE"); env && *env) token_file = env;
    if (!token_file.empty()) co.token = AISRV_TRY(client::read_token_file(token_file));
    auto c = client::Client::connect(target(), co);
    if (!c) return std::move(c).error();
    client_.emplace(std::move(c).value());
  }
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
