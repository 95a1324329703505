// aisrv CLI — sensor and output-GPIO commands: acquire single|stream start|stop|frame|mode, gpio get|set|mode,
// i2c write (docs/cli.md, docs/sensors-gpio.md). They need a server configured with --sensor / --sensor-i2c /
// --gpio; without one the server's NOT_SUPPORTED answer and its log line are printed.
#include <fmt/format.h>

#include <charconv>

#include "aisrv/protocol/limits.h"
#include "cli_context.hpp"
#include "file_io.hpp"
#include "output_report.hpp"

namespace aisrv::cli {

namespace {

// "X0,X1,Y0,Y1" (ends exclusive).
Result<client::Client::Window> parse_window(const std::string& text) {
  uint32_t v[4];
  std::string_view rest(text);
  for (int i = 0; i < 4; ++i) {
    const auto comma = rest.find(',');
    const auto item = rest.substr(0, comma);
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v[i]);
    if (item.empty() || ec != std::errc{} || p != item.data() + item.size() || v[i] > 0xFFFF ||
        (i < 3) == (comma == std::string_view::npos))
      return make_error(Errc::invalid_argument, "--window '{}' is not X0,X1,Y0,Y1 (pixels, ends exclusive)", text);
    rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
  }
  return client::Client::Window{static_cast<uint16_t>(v[0]), static_cast<uint16_t>(v[1]), static_cast<uint16_t>(v[2]),
                                static_cast<uint16_t>(v[3])};
}

// GET_ACQUIRE_MODE (XMOS's values): 0 single (not streaming), 1 stream.
const char* mode_name(uint32_t m) {
  return m == AISRV_ACQUIRE_MODE_SINGLE ? "single" : m == AISRV_ACQUIRE_MODE_STREAM ? "stream" : "unknown";
}

// Integers as C would read them: decimal, 0x hex.
Result<uint32_t> parse_uint(const std::string& text, const char* what, uint32_t max) {
  uint32_t v = 0;
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* b = text.data() + (hex ? 2 : 0);
  const auto [p, ec] = std::from_chars(b, text.data() + text.size(), v, hex ? 16 : 10);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || v > max)
    return make_error(Errc::invalid_argument, "{} '{}' is not a number 0..{:#x}", what, text, max);
  return v;
}

}  // namespace

void add_sensor_commands(CLI::App& app, CliContext& ctx) {
  // --- acquire --------------------------------------------------------------------------------------------------------
  auto* acquire = app.add_subcommand("acquire", "Camera / sensor acquisition on the engine (needs aisrvd --sensor)");
  acquire->require_subcommand(1);

  struct SingleArgs {
    std::string window, frame_out;
    bool no_infer = false;
    OutputArgs out;
  };
  auto single_args = std::make_shared<SingleArgs>();
  auto* single = acquire->add_subcommand(
      "single", "Capture a frame, preprocess it into input 0 and infer (START_ACQUIRE_SINGLE, tensor 1); print the "
                "outputs (--no-infer: only fill input 0, as an XMOS host's START_ACQUIRE_SINGLE)");
  single->add_option("--window", single_args->window,
                     "X0,X1,Y0,Y1: crop this part of the picture (ends exclusive), resized to the input");
  single->add_option("--frame-out", single_args->frame_out, "Write the frame as fed to input 0 to this file");
  single->add_flag("--no-infer", single_args->no_infer, "Only fill input 0 (no inference, no outputs printed)");
  single->add_option("-o,--out", single_args->out.outputs, "Write output tensor 0, 1, ... to these files");
  single->add_option("--labels", single_args->out.labels, "Labels file (one per line) for the top-k listing");
  single->add_option("--top", single_args->out.top, "How many top classes to list (default 5)");
  single->callback([&ctx, single_args] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      std::optional<client::Client::Window> window;
      if (!single_args->window.empty()) window = AISRV_TRY(parse_window(single_args->window));
      const auto labels = AISRV_TRY(read_labels(single_args->out.labels));
      AISRV_TRY(c->acquire_single(e, window, !single_args->no_infer));
      const auto info = AISRV_TRY(c->tensor_info(e));
      if (!single_args->frame_out.empty())
        AISRV_TRY(write_file(single_args->frame_out, AISRV_TRY(c->sensor_frame(e))));
      if (single_args->no_infer) {
        if (ctx.options.json) ctx.print_json({{"engine", e}, {"inferred", false}});
        else fmt::print("engine {}: frame acquired into input 0 (no inference)\n", e);
        return ok();
      }
      nlohmann::json outputs = nlohmann::json::array();
      for (size_t i = 0; i < info.outputs.size(); ++i) {
        const auto bytes = AISRV_TRY(c->get_output(e, static_cast<uint32_t>(i)));
        if (i < single_args->out.outputs.size()) AISRV_TRY(write_file(single_args->out.outputs[i], bytes));
        outputs.push_back(report_output(info.outputs[i], i, bytes, single_args->out, labels, ctx.options.json));
      }
      if (ctx.options.json) ctx.print_json({{"engine", e}, {"outputs", outputs}});
      return ok();
    });
  });

  auto* stream = acquire->add_subcommand("stream", "Continuous acquisition + inference (START_ACQUIRE_STREAM)");
  stream->require_subcommand(1);
  for (const bool start : {true, false}) {
    stream->add_subcommand(start ? "start" : "stop",
                           start ? "Start streaming (at aisrvd's --stream-fps; a slow engine drops frames, never "
                                   "queues them)"
                                 : "Stop the stream")
        ->callback([&ctx, start] {
          ctx.run([&]() -> Status {
            auto* c = AISRV_TRY(ctx.client());
            AISRV_TRY(c->acquire_stream(ctx.options.engine, start));
            if (ctx.options.json)
              ctx.print_json({{"engine", ctx.options.engine}, {"streaming", start}});
            else
              fmt::print("engine {}: stream {}\n", ctx.options.engine, start ? "started" : "stopped");
            return ok();
          });
        });
  }

  auto frame_out = std::make_shared<std::string>();
  auto* frame = acquire->add_subcommand("frame", "Get the last frame as fed to input 0 (GET_SENSOR_TENSOR)");
  frame->add_option("-o,--out", *frame_out, "Write it to this file (else print its size)");
  frame->callback([&ctx, frame_out] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const auto bytes = AISRV_TRY(c->sensor_frame(ctx.options.engine));
      if (!frame_out->empty()) AISRV_TRY(write_file(*frame_out, bytes));
      if (ctx.options.json)
        ctx.print_json({{"engine", ctx.options.engine}, {"bytes", bytes.size()}, {"file", *frame_out}});
      else
        fmt::print("frame: {} bytes{}\n", bytes.size(), frame_out->empty() ? "" : " written to " + *frame_out);
      return ok();
    });
  });

  acquire->add_subcommand("mode", "Print the acquisition mode (GET_ACQUIRE_MODE: single (not streaming) or stream)")
      ->callback([&ctx] {
        ctx.run([&]() -> Status {
          auto* c = AISRV_TRY(ctx.client());
          const uint32_t m = AISRV_TRY(c->acquire_mode(ctx.options.engine));
          if (ctx.options.json)
            ctx.print_json({{"engine", ctx.options.engine}, {"mode", m}, {"mode_name", mode_name(m)}});
          else
            fmt::print("engine {}: {}\n", ctx.options.engine, mode_name(m));
          return ok();
        });
      });

  // --- gpio -----------------------------------------------------------------------------------------------------------
  auto* gpio = app.add_subcommand("gpio", "Output GPIO lines driven from output tensor 0 (needs aisrvd --gpio)");
  gpio->require_subcommand(1);
  gpio->add_subcommand("get", "Print every line's enable and threshold and the engine's mode")->callback([&ctx] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      const uint32_t mode = AISRV_TRY(c->gpio_mode(e));
      nlohmann::json lines = nlohmann::json::array();
      for (uint32_t i = 0; i < 32; ++i) {
        auto line = c->gpio_line(e, i);
        if (!line && line.error().code == Errc::bad_tensor && i > 0) break;  // past the last line
        const auto l = AISRV_TRY(std::move(line));
        lines.push_back({{"line", i}, {"enabled", l.enabled}, {"threshold", l.threshold}});
        if (!ctx.options.json)
          fmt::print("line {}: {} threshold {}\n", i, l.enabled ? "enabled " : "disabled", l.threshold);
      }
      if (ctx.options.json)
        ctx.print_json({{"engine", e}, {"mode", mode == 1 ? "max" : "threshold"}, {"lines", lines}});
      else
        fmt::print("mode: {}\n", mode == 1 ? "max (only the arg-max's line)" : "threshold (line i: output[i] > threshold)");
      return ok();
    });
  });

  struct SetArgs {
    uint32_t line = 0;
    std::optional<bool> enable;
    std::optional<double> threshold;
  };
  auto set_args = std::make_shared<SetArgs>();
  auto* set = gpio->add_subcommand("set", "Enable/disable a line and set its threshold (admin)");
  set->add_option("line", set_args->line, "Line index (the order of aisrvd --gpio's lines)")->required();
  set->add_option("--enable", set_args->enable, "1: the line follows the output, 0: held low");
  set->add_option("--threshold", set_args->threshold,
                  "The line is high when its output element is above this (the element's own units: raw int8/uint8 "
                  "values for quantized outputs, an integer; a number such as 0.5 for a float32 output)");
  set->callback([&ctx, set_args] {
    ctx.run([&]() -> Status {
      if (!set_args->enable && !set_args->threshold)
        return make_error(Errc::invalid_argument, "gpio set: give --enable and/or --threshold");
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      if (set_args->threshold) AISRV_TRY(c->set_gpio_threshold(e, set_args->line, *set_args->threshold));
      if (set_args->enable) AISRV_TRY(c->set_gpio_enabled(e, set_args->line, *set_args->enable));
      const auto l = AISRV_TRY(c->gpio_line(e, set_args->line));
      if (ctx.options.json)
        ctx.print_json({{"engine", e}, {"line", set_args->line}, {"enabled", l.enabled}, {"threshold", l.threshold}});
      else
        fmt::print("line {}: {} threshold {}\n", set_args->line, l.enabled ? "enabled" : "disabled", l.threshold);
      return ok();
    });
  });

  auto mode_arg = std::make_shared<std::string>();
  auto* mode = gpio->add_subcommand("mode", "Set the engine's GPIO mode: threshold (each line against its own "
                                            "element) or max (only the arg-max's line) (admin)");
  mode->add_option("mode", *mode_arg, "threshold or max")->required()->check(CLI::IsMember({"threshold", "max"}));
  mode->callback([&ctx, mode_arg] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      AISRV_TRY(c->set_gpio_mode(ctx.options.engine, *mode_arg == "max" ? 1 : 0));
      if (ctx.options.json)
        ctx.print_json({{"engine", ctx.options.engine}, {"mode", *mode_arg}});
      else
        fmt::print("engine {}: GPIO mode {}\n", ctx.options.engine, *mode_arg);
      return ok();
    });
  });

  // --- i2c ------------------------------------------------------------------------------------------------------------
  auto* i2c = app.add_subcommand("i2c", "The sensor's I2C bus (needs aisrvd --sensor-i2c)");
  i2c->require_subcommand(1);
  struct I2cArgs {
    std::string address, reg, value;
  };
  auto i2c_args = std::make_shared<I2cArgs>();
  auto* write = i2c->add_subcommand("write", "Write one register of a device on the bus (START_ACQUIRE_SET_I2C; admin)");
  write->add_option("address", i2c_args->address, "7-bit device address, e.g. 0x3c")->required();
  write->add_option("register", i2c_args->reg, "Register, e.g. 0x12")->required();
  write->add_option("value", i2c_args->value, "Byte to write, e.g. 0x80")->required();
  write->callback([&ctx, i2c_args] {
    ctx.run([&]() -> Status {
      const uint32_t a = AISRV_TRY(parse_uint(i2c_args->address, "address", 0x7F));
      const uint32_t r = AISRV_TRY(parse_uint(i2c_args->reg, "register", 0xFF));
      const uint32_t v = AISRV_TRY(parse_uint(i2c_args->value, "value", 0xFF));
      auto* c = AISRV_TRY(ctx.client());
      AISRV_TRY(c->i2c_write(ctx.options.engine, static_cast<uint8_t>(a), static_cast<uint8_t>(r),
                             static_cast<uint8_t>(v)));
      if (ctx.options.json)
        ctx.print_json({{"engine", ctx.options.engine}, {"address", a}, {"register", r}, {"value", v}});
      else
        fmt::print("device {:#04x}: register {:#04x} = {:#04x}\n", a, r, v);
      return ok();
    });
  });
}

}  // namespace aisrv::cli
