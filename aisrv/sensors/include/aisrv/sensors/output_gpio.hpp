// aisrv sensors — output GPIO policy: which level each configured line gets from an engine's output tensor 0
// after an inference (docs/sensors-gpio.md). Follows xmos/aisrv's HandleGpio: mode 0 (threshold) drives line i high
// when element i exceeds line i's threshold; mode 1 (max) drives only the line whose index is the arg-max of the whole
// tensor, and only if that element exceeds the line's threshold. Differences from XMOS: enable is per line (XMOS:
// one flag for all; set_all_enabled is its form), the threshold is a number compared with the element's value in its
// own type (integer types raw, float32 as a number; XMOS: int8 only), and the arg-max is the true one (XMOS starts its
// search at 0). Released lines (model unloaded, shutdown) are driven to their idle level (GpioLines::idle, low unless
// configured) first, so a LED that was lit goes out; disabled lines rest at it too, and so do all lines when an
// acquire stream stops (rest: its last frame's result would otherwise stay lit with no camera behind it).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "aisrv/sensors/gpio_lines.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::sensors {

enum class GpioMode : uint32_t { threshold = 0, max = 1 };

struct GpioPolicy {
  std::vector<uint8_t> enabled;   // per line; gpio_levels gives disabled lines 0 (OutputGpio: their idle level)
  std::vector<double> threshold;  // per line; default -128 as XMOS (a float32 output's may be fractional)
  GpioMode mode = GpioMode::threshold;
};

// The levels (0/1, one per line) `policy` gives for output tensor `info` holding `bytes`.
std::vector<uint8_t> gpio_levels(const GpioPolicy& policy, const protocol::TensorInfo& info,
                                 std::span<const uint8_t> bytes);

// An engine's output lines with their policy. Thread-safe: commands read and change the policy while inferences
// drive the lines.
class OutputGpio {
 public:
  explicit OutputGpio(std::unique_ptr<GpioLines> lines);
  ~OutputGpio() { release(); }  // the daemon stops: lines to the idle level
  OutputGpio(const OutputGpio&) = delete;
  OutputGpio& operator=(const OutputGpio&) = delete;
  std::string describe() const { return lines_->describe(); }
  size_t count() const { return lines_->count(); }

  Result<uint32_t> enabled(uint32_t line) const;
  Status set_enabled(uint32_t line, uint32_t on);
  // XMOS's SET_OUTPUT_GPIO_EN: one flag for every line.
  Status set_all_enabled(uint32_t on);
  Result<double> threshold(uint32_t line) const;
  Status set_threshold(uint32_t line, double value);  // Errc::bad_length for NaN
  GpioMode mode() const;
  Status set_mode(uint32_t mode);

  // After an inference: compute and set the levels (disabled lines: idle). Not held (no model): nothing is driven.
  Status drive(const protocol::TensorInfo& info, std::span<const uint8_t> bytes);
  // The levels last driven (the idle levels before the first).
  std::vector<uint8_t> levels() const;
  // Model loaded / unloaded: take / give back the lines; both leave them at their idle level (GpioLines::idle).
  Status request();
  void release();
  // Held lines back to their idle level, still held (an acquire stream stopped). True when a level changed.
  Result<bool> rest();

 private:
  Status check_line(uint32_t line) const;
  mutable std::mutex mu_;
  std::unique_ptr<GpioLines> lines_;
  GpioPolicy policy_;
  std::vector<uint8_t> levels_;
};

}  // namespace aisrv::sensors
