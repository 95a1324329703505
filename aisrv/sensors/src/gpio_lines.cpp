// aisrv sensors — output GPIO lines through the GPIO character device with libgpiod 1.x (gpio_lines.hpp; CMake
// refuses 2.x, whose API differs). A chip whose device goes away (a USB GPIO bridge unplugged) is opened again under
// its name when it is back: at the next inference's set or the next model load's request.
#include "aisrv/sensors/gpio_lines.hpp"

#include <gpiod.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace aisrv::sensors {

namespace {

class LinuxGpioLines final : public GpioLines {
 public:
  LinuxGpioLines(GpioSpec spec, std::string consumer, gpiod_chip* chip)
      : spec_(std::move(spec)), consumer_(std::move(consumer)), chip_(chip) {}
  ~LinuxGpioLines() override {
    release();
    if (chip_) gpiod_chip_close(chip_);
  }

  std::string describe() const override {
    return fmt::format("gpio:{}:{}", spec_.chip, fmt::join(spec_.lines, ","));
  }
  size_t count() const override { return spec_.lines.size(); }
  bool held() const override { return held_; }
  std::vector<uint8_t> idle() const override {
    return spec_.idle.size() == spec_.lines.size() ? spec_.idle : std::vector<uint8_t>(spec_.lines.size(), 0);
  }

  Status request() override {
    if (held_) return ok();
    Status st = request_lines();
    if (!st && gone_) {
      // The chip went away since it was opened (a USB GPIO bridge unplugged and plugged in again): open it anew
      // under its name, then request again.
      AISRV_TRY(reopen());
      st = request_lines();
    }
    AISRV_TRY(std::move(st));
    held_ = true;
    return ok();
  }

  void release() override {
    if (!held_) return;
    if (chip_ && !gone_) gpiod_line_release_bulk(&bulk_);
    held_ = false;
  }

  Status set(std::span<const uint8_t> levels) override {
    if (!held_) return make_error(Errc::not_supported, "{}: the lines are not held (no model loaded)", describe());
    if (levels.size() != spec_.lines.size())
      return make_error(Errc::bad_length, "{}: {} levels for {} lines", describe(), levels.size(), spec_.lines.size());
    std::vector<int> v(levels.begin(), levels.end());
    if (gone_) {
      // Unplugged earlier: each set tries the chip again, so the lines come back when it is plugged in (a chip that
      // has just appeared may refuse the request while its driver still starts: then the next set tries again).
      AISRV_TRY(reopen());
      if (Status st = request_lines(); !st) {
        gone_ = true;
        return st;
      }
    }
    if (gpiod_line_set_value_bulk(&bulk_, v.data()) == 0) return ok();
    // The line handles failed: the device behind the chip is most likely gone (an unplugged USB bridge; the kernel
    // answers ENODEV, or the driver's transfer error). The handle is dead either way: open the chip again by its
    // name now and at every later set until it is back.
    const int err = errno;
    gone_ = true;
    if (reopen() && request_lines() && gpiod_line_set_value_bulk(&bulk_, v.data()) == 0) return ok();
    return make_error(Errc::io_error, "{}: setting the lines failed: {} (errno {}); the chip is opened again at the "
                      "next change of the levels",
                      describe(), std::strerror(err), err);
  }

 private:
  // Requests the lines of the open chip as outputs, driven to their idle level. Notes a chip that is gone (gone_).
  Status request_lines() {
    if (!chip_) return make_error(Errc::not_found, "{}: GPIO chip '{}' is not present", describe(), spec_.chip);
    gpiod_line_bulk_init(&bulk_);
    for (uint32_t offset : spec_.lines) {
      gpiod_line* line = gpiod_chip_get_line(chip_, offset);
      if (!line) {
        if (errno == ENODEV) gone_ = true;
        return make_error(Errc::not_found, "{}: line {} does not exist ({} has {} lines)", describe(), offset,
                          gpiod_chip_name(chip_), gpiod_chip_num_lines(chip_));
      }
      gpiod_line_bulk_add(&bulk_, line);
    }
    const std::vector<uint8_t> rest = idle();
    std::vector<int> initial(rest.begin(), rest.end());
    if (gpiod_line_request_bulk_output(&bulk_, consumer_.c_str(), initial.data()) < 0) {
      const int err = errno;
      if (err == ENODEV || err == EIO) {
        gone_ = true;
        return make_error(Errc::io_error, "{}: the GPIO chip went away: {} (errno {})", describe(), std::strerror(err),
                          err);
      }
      // Name the holder when the kernel says the line is used.
      for (unsigned i = 0; i < gpiod_line_bulk_num_lines(&bulk_); ++i) {
        gpiod_line* line = gpiod_line_bulk_get_line(&bulk_, i);
        gpiod_line_update(line);
        if (gpiod_line_is_used(line)) {
          const char* who = gpiod_line_consumer(line);
          return make_error(Errc::denied, "{}: line {} is in use by '{}' ({})", describe(), gpiod_line_offset(line),
                            who ? who : "the kernel", std::strerror(err));
        }
      }
      return make_error(Errc::io_error, "{}: cannot request the lines as outputs: {} (errno {})", describe(),
                        std::strerror(err), err);
    }
    return ok();
  }

  // Closes the dead chip handle (which frees its line handles) and opens the chip under its name again.
  Status reopen() {
    if (chip_) gpiod_chip_close(chip_);
    chip_ = gpiod_chip_open_lookup(spec_.chip.c_str());
    if (!chip_)
      return make_error(errno == ENOENT ? Errc::not_found : Errc::io_error, "{}: GPIO chip '{}' is not back: {}",
                        describe(), spec_.chip, std::strerror(errno));
    gone_ = false;
    return ok();
  }

  GpioSpec spec_;
  std::string consumer_;
  gpiod_chip* chip_;  // null while the chip is absent (unplugged and not back yet)
  gpiod_line_bulk bulk_{};
  bool held_ = false;  // the lines are wanted (a model is loaded); requested on the chip unless gone_
  bool gone_ = false;  // the chip's device went away: the handle is dead until reopen()
};

}  // namespace

Result<GpioSpec> parse_gpio_spec(const std::string& full) {
  // The idle level, when given, is the last field.
  std::string spec = full, idle;
  if (const auto at = full.rfind(":idle="); at != std::string::npos) {
    spec = full.substr(0, at);
    idle = full.substr(at + 6);
  }
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    return make_error(Errc::invalid_argument, "GPIO spec '{}' is not CHIP:LINE[,LINE...][:idle=low|high|0,1,...]",
                      full);
  GpioSpec g;
  g.chip = spec.substr(0, colon);
  std::string_view rest(spec);
  rest.remove_prefix(colon + 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = rest.substr(0, comma);
    uint32_t v = 0;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || p != item.data() + item.size())
      return make_error(Errc::invalid_argument, "GPIO spec '{}': '{}' is not a line number", spec, item);
    for (uint32_t have : g.lines)
      if (have == v) return make_error(Errc::invalid_argument, "GPIO spec '{}': line {} is named twice", spec, v);
    g.lines.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    if (rest.empty()) return make_error(Errc::invalid_argument, "GPIO spec '{}' ends with a comma", spec);
  }
  if (g.lines.size() > 32) return make_error(Errc::invalid_argument, "GPIO spec '{}': at most 32 lines", full);
  if (idle.empty() && full.size() != spec.size())
    return make_error(Errc::invalid_argument, "GPIO spec '{}': idle= needs low, high or one 0/1 per line", full);
  if (idle.empty() || idle == "low" || idle == "high") {
    g.idle.assign(g.lines.size(), idle == "high" ? 1 : 0);
    return g;
  }
  for (size_t i = 0; i < idle.size(); i += 2) {
    if ((idle[i] != '0' && idle[i] != '1') || (i + 1 < idle.size() && idle[i + 1] != ','))
      return make_error(Errc::invalid_argument, "GPIO spec '{}': idle level '{}' is not low, high or 0/1 per line",
                        full, idle);
    g.idle.push_back(static_cast<uint8_t>(idle[i] - '0'));
  }
  if (idle.back() == ',') return make_error(Errc::invalid_argument, "GPIO spec '{}' ends with a comma", full);
  if (g.idle.size() != g.lines.size())
    return make_error(Errc::invalid_argument, "GPIO spec '{}': {} idle level(s) for {} line(s)", full, g.idle.size(),
                      g.lines.size());
  return g;
}

Result<std::unique_ptr<GpioLines>> open_gpio_lines(const GpioSpec& spec, const std::string& consumer) {
  // gpiod_chip_open_lookup takes a name, a path, a number or a label.
  gpiod_chip* chip = gpiod_chip_open_lookup(spec.chip.c_str());
  if (!chip)
    return make_error(errno == ENOENT ? Errc::not_found : Errc::io_error, "cannot open GPIO chip '{}': {}", spec.chip,
                      std::strerror(errno));
  auto lines = std::make_unique<LinuxGpioLines>(spec, consumer, chip);
  AISRV_TRY(lines->request());
  return std::unique_ptr<GpioLines>(std::move(lines));
}

}  // namespace aisrv::sensors
