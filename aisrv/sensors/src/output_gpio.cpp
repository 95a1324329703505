// aisrv sensors — output GPIO policy and driving (output_gpio.hpp).
#include "aisrv/sensors/output_gpio.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aisrv::sensors {

namespace {

// Element `i` of a tensor as a number in its own type; nullopt for types the policy does not read.
std::optional<double> element(protocol::DType t, std::span<const uint8_t> b, size_t i) {
  auto at = [&]<typename T>(T) -> std::optional<double> {
    if ((i + 1) * sizeof(T) > b.size()) return std::nullopt;
    T v;
    std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
    return static_cast<double>(v);
  };
  switch (t) {
    case protocol::DType::int8: return at(int8_t{});
    case protocol::DType::uint8: return at(uint8_t{});
    case protocol::DType::int16: return at(int16_t{});
    case protocol::DType::uint16: return at(uint16_t{});
    case protocol::DType::int32: return at(int32_t{});
    case protocol::DType::float32: return at(float{});
    default: return std::nullopt;
  }
}

size_t element_size(protocol::DType t) {
  switch (t) {
    case protocol::DType::int8:
    case protocol::DType::uint8: return 1;
    case protocol::DType::int16:
    case protocol::DType::uint16: return 2;
    case protocol::DType::int32:
    case protocol::DType::float32: return 4;
    default: return 0;
  }
}

}  // namespace

std::vector<uint8_t> gpio_levels(const GpioPolicy& p, const protocol::TensorInfo& info,
                                 std::span<const uint8_t> bytes) {
  const size_t lines = p.enabled.size();
  std::vector<uint8_t> out(lines, 0);
  const size_t es = element_size(info.dtype);
  if (es == 0) return out;
  const size_t n = bytes.size() / es;
  if (p.mode == GpioMode::max) {
    if (n == 0) return out;
    size_t best = 0;
    double best_v = *element(info.dtype, bytes, 0);
    for (size_t i = 1; i < n; ++i)
      if (const double v = *element(info.dtype, bytes, i); v > best_v) best = i, best_v = v;
    if (best < lines && p.enabled[best] && best_v > p.threshold[best]) out[best] = 1;
    return out;
  }
  for (size_t i = 0; i < lines && i < n; ++i)
    out[i] = p.enabled[i] && *element(info.dtype, bytes, i) > p.threshold[i] ? 1 : 0;
  return out;
}

OutputGpio::OutputGpio(std::unique_ptr<GpioLines> lines) : lines_(std::move(lines)) {
  policy_.enabled.assign(lines_->count(), 0);
  policy_.threshold.assign(lines_->count(), -128);
  levels_ = lines_->idle();
}

Status OutputGpio::check_line(uint32_t line) const {
  if (line >= lines_->count())
    return make_error(Errc::bad_tensor, "GPIO output {} does not exist ({} has {} line(s))", line, describe(),
                      lines_->count());
  return ok();
}

Result<uint32_t> OutputGpio::enabled(uint32_t line) const {
  AISRV_TRY(check_line(line));
  std::lock_guard lock(mu_);
  return policy_.enabled[line];
}

Status OutputGpio::set_enabled(uint32_t line, uint32_t on) {
  AISRV_TRY(check_line(line));
  if (on > 1) return make_error(Errc::bad_length, "GPIO enable takes 0 or 1, not {}", on);
  std::lock_guard lock(mu_);
  policy_.enabled[line] = static_cast<uint8_t>(on);
  return ok();
}

Status OutputGpio::set_all_enabled(uint32_t on) {
  if (on > 1) return make_error(Errc::bad_length, "GPIO enable takes 0 or 1, not {}", on);
  std::lock_guard lock(mu_);
  policy_.enabled.assign(lines_->count(), static_cast<uint8_t>(on));
  return ok();
}

Result<double> OutputGpio::threshold(uint32_t line) const {
  AISRV_TRY(check_line(line));
  std::lock_guard lock(mu_);
  return policy_.threshold[line];
}

Status OutputGpio::set_threshold(uint32_t line, double value) {
  AISRV_TRY(check_line(line));
  if (std::isnan(value)) return make_error(Errc::bad_length, "a GPIO threshold must be a number, not NaN");
  std::lock_guard lock(mu_);
  policy_.threshold[line] = value;
  return ok();
}

GpioMode OutputGpio::mode() const {
  std::lock_guard lock(mu_);
  return policy_.mode;
}

Status OutputGpio::set_mode(uint32_t mode) {
  if (mode > 1) return make_error(Errc::bad_length, "GPIO mode {} is unknown (0 threshold, 1 max)", mode);
  std::lock_guard lock(mu_);
  policy_.mode = static_cast<GpioMode>(mode);
  return ok();
}

Status OutputGpio::drive(const protocol::TensorInfo& info, std::span<const uint8_t> bytes) {
  std::lock_guard lock(mu_);
  if (!lines_->held()) return ok();
  // Lines the policy does not drive (disabled) stay at their idle level.
  auto next = gpio_levels(policy_, info, bytes);
  const std::vector<uint8_t> idle = lines_->idle();
  for (size_t i = 0; i < next.size() && i < idle.size(); ++i)
    if (!policy_.enabled[i]) next[i] = idle[i];
  if (next == levels_) return ok();
  AISRV_TRY(lines_->set(next));
  levels_ = std::move(next);
  return ok();
}

std::vector<uint8_t> OutputGpio::levels() const {
  std::lock_guard lock(mu_);
  return levels_;
}

Status OutputGpio::request() {
  std::lock_guard lock(mu_);
  if (lines_->held()) return ok();
  AISRV_TRY(lines_->request());
  levels_ = lines_->idle();  // requested at the idle level
  return ok();
}

Result<bool> OutputGpio::rest() {
  std::lock_guard lock(mu_);
  std::vector<uint8_t> idle = lines_->idle();
  if (!lines_->held() || levels_ == idle) return false;
  AISRV_TRY(lines_->set(idle));
  levels_ = std::move(idle);
  return true;
}

void OutputGpio::release() {
  std::lock_guard lock(mu_);
  const std::vector<uint8_t> idle = lines_->idle();
  if (lines_->held() && levels_ != idle) {
    // Idle level first: a released line keeps the value it had, so a lit LED would stay lit.
    (void)lines_->set(idle);  // a chip that went away is released all the same
  }
  lines_->release();
  levels_ = idle;
}

}  // namespace aisrv::sensors
