// aisrv sensors — the output-GPIO port: the lines an engine drives from its output tensor (SET_OUTPUT_GPIO_*).
// The interpreter only sees this interface; the Linux implementation requests the lines from a GPIO character device
// through libgpiod with the consumer name "aisrvd" (visible in `gpioinfo`), so a line another program holds is a
// clear error, never a silent no-op.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/result.hpp"

namespace aisrv::sensors {

class GpioLines {
 public:
  virtual ~GpioLines() = default;
  virtual std::string describe() const = 0;  // "gpio:gpiochip0:17,27"
  virtual size_t count() const = 0;
  // Requests the lines as outputs, driven to their idle level, if they are not held yet. Errc::busy-like failures
  // (another consumer holds a line) come back as Errc::denied naming the line and its consumer.
  virtual Status request() = 0;
  // Gives the lines back to the kernel (idempotent). The lines keep the level they had: drive idle() first.
  virtual void release() = 0;
  // The level (0/1) of each line while no inference drives it: when requested, and when released (model unloaded,
  // daemon stopped), so an active-low LED can be off at rest. Low unless configured (GpioSpec::idle).
  virtual std::vector<uint8_t> idle() const { return std::vector<uint8_t>(count(), 0); }
  virtual bool held() const = 0;
  // One level (0/1) per line, in the order they were configured. Needs the lines held.
  virtual Status set(std::span<const uint8_t> levels) = 0;
};

// "CHIP:LINE[,LINE...][:idle=LEVELS]": CHIP is a name (gpiochip0), a path (/dev/gpiochip0), a number or a label
// (cp2112); LINE offsets on that chip, at most 32. LEVELS, the idle level (GpioLines::idle): `low` (the default),
// `high`, or one 0/1 per line ("idle=1,0").
struct GpioSpec {
  std::string chip;
  std::vector<uint32_t> lines;
  std::vector<uint8_t> idle;  // one per line
};
Result<GpioSpec> parse_gpio_spec(const std::string& spec);
// Opens the chip and requests the lines (request() above), so a missing chip, a missing line or a busy one is an
// error at start-up.
Result<std::unique_ptr<GpioLines>> open_gpio_lines(const GpioSpec& spec, const std::string& consumer = "aisrvd");

}  // namespace aisrv::sensors
