// aisrv protocol — C++ view of the command/status tables, the request/response messages every transport carries,
// and the header/limit constants. Everything here is derived from commands.h / status.h / limits.h.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "aisrv/protocol/commands.h"
#include "aisrv/protocol/header.h"
#include "aisrv/protocol/limits.h"
#include "aisrv/protocol/result.hpp"
#include "aisrv/protocol/status.h"

namespace aisrv::protocol {

enum class Command : uint32_t {
#define AISRV_X_ENUM(name, value, kind, req, resp) name = value,
  AISRV_COMMAND_TABLE(AISRV_X_ENUM)
#undef AISRV_X_ENUM
};

inline constexpr uint32_t kHeaderSize = AISRV_HEADER_SIZE;
inline constexpr uint32_t kMaxPayload = AISRV_MAX_PAYLOAD;
inline constexpr uint32_t kMaxEngines = AISRV_MAX_ENGINES;
inline constexpr uint32_t kMaxTensors = AISRV_MAX_TENSORS;
inline constexpr uint32_t kEngineServer = AISRV_ENGINE_SERVER;

// True when the opcode is in the table.
bool is_known(uint32_t cmd);
// True when the host sends data with this opcode (bit 0x80).
constexpr bool is_set(uint32_t cmd) { return (cmd & AISRV_CMD_SET_BIT) != 0; }
// Framing decisions: the host sends a payload (SET and CALL commands: bit 0x80); the server answers with one (GET and
// CALL commands; an opcode not in the table follows its bit).
bool host_sends(uint32_t cmd);
bool server_returns(uint32_t cmd);
std::string_view command_name(uint32_t cmd);
// Opcode for a table name such as "GET_SPEC" (case-insensitive).
std::optional<uint32_t> command_by_name(std::string_view name);
// Name of the lowest status bit, "OKAY" for 0.
std::string_view status_name(uint32_t status);
// All status bits set in `status`, e.g. "BUSY|ERROR_NO_MODEL".
std::string status_names(uint32_t status);

struct Header {
  uint32_t cmd = 0;
  uint32_t engine = 0;
  uint32_t tensor = 0;
};

void encode_header(const Header& h, std::span<uint8_t, kHeaderSize> out);
Header decode_header(std::span<const uint8_t, kHeaderSize> in);

// A transport that can put an answer on the wire straight from where its bytes live offers this in Request::sink.
// The interpreter then offers it an output tensor's bytes instead of copying them into Response::payload. Called at
// most once per request, when the status is OKAY and nothing can fail any more; the bytes are valid only during the
// call (the session's tensors are held meanwhile, so an inference cannot change them half-way — and the sink must not
// wait for the peer). Returns true when it took them (then Response::sent is set and the payload stays empty), false to
// decline (the interpreter copies them into Response::payload as usual).
class PayloadSink {
 public:
  virtual ~PayloadSink() = default;
  virtual bool write(std::span<const uint8_t> payload) = 0;
};

// A decoded request as every transport hands it to the interpreter; the payload is a view into the transport's
// receive buffer, valid until the response has been produced.
struct Request {
  Header header;
  std::span<const uint8_t> payload;
  // Optional: the buffer `payload` views, which the interpreter may take instead of copying (SET_INPUT_TENSOR makes it
  // the session's input tensor; a transport that can receive into a fresh buffer next time sets it; it gets back a
  // buffer of unspecified content, possibly empty).
  std::vector<uint8_t>* donor = nullptr;
  // Optional: where a large answer may go without a copy (see PayloadSink).
  PayloadSink* sink = nullptr;
};

// The interpreter's answer; transports frame it. `payload` is reused between requests to avoid reallocations.
struct Response {
  uint32_t status = AISRV_STATUS_OKAY;
  std::vector<uint8_t> payload;
  bool sent = false;  // status OKAY and the payload went to Request::sink (payload is empty)

  void clear() {
    status = AISRV_STATUS_OKAY;
    payload.clear();
    sent = false;
  }
};

}  // namespace aisrv::protocol
