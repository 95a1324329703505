// aisrv — the one error model of the code base: an error code (Errc) that maps one-to-one onto a wire status bit,
// a human-readable message, and Result<T> carrying either a value or an Error. Local-only codes (I/O, timeout,
// protocol violation, incompatible peer, device not found) never travel on the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace aisrv {

enum class Errc : uint32_t {
  // one per wire error bit (status.h)
  no_model = 1,
  model_error,
  infer_error,
  bad_command,
  bad_engine,
  bad_tensor,
  bad_length,
  not_supported,
  flash_error,
  crc_error,
  cancelled,
  internal,
  model_changed,  // the model changed under this session's inputs or outputs
  denied,         // access rule, token, or owned by another session
  limit,          // a configured limit was reached
  sensor_error,   // the sensor failed (camera gone or stalled, I2C write refused)
  // local only
  io_error,        // a transport read/write failed or the peer went away
  timeout,         // no answer in time
  protocol_error,  // the peer sent something the framing does not allow
  incompatible,    // protocol versions do not overlap
  not_found,       // no such device / file / endpoint
  invalid_argument, // a local caller passed something unusable (CLI, API)
  interrupted       // a system call was interrupted after its effect may have happened (not retried)
};

// Wire status bit for an error code (local-only codes map to ERROR_INTERNAL).
uint32_t to_status(Errc code);
// Error code for a non-zero wire status (lowest error bit wins; unknown bits map to internal).
Errc from_status(uint32_t status);
// Stable lower-case name, e.g. "bad_length".
std::string_view errc_name(Errc code);

struct Error {
  Errc code = Errc::internal;
  std::string message;

  std::string what() const { return fmt::format("{}: {}", errc_name(code), message); }
};

template <typename... Args>
Error make_error(Errc code, fmt::format_string<Args...> f, Args&&... args) {
  return Error{code, fmt::format(f, std::forward<Args>(args)...)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  void value() const {}
  const Error& error() const& { return *e_; }
  Error&& error() && { return std::move(*e_); }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

inline Status ok() { return {}; }

}  // namespace aisrv

// Propagate an error from an expression yielding Result<T>; evaluates to the value on success (GNU statement
// expression, supported by GCC and Clang).
#define AISRV_TRY(expr)                                  \
  ({                                                     \
    auto&& aisrv_try_r_ = (expr);                        \
    if (!aisrv_try_r_.ok()) return std::move(aisrv_try_r_).error(); \
    std::move(aisrv_try_r_).value();                     \
  })
