// aisrv CLI — the inference command: infer (raw tensors or pictures from files, batches of pictures, outputs printed or
// written, optional timings).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "aisrv/image/image.hpp"
#include "aisrv/image/tensor_image.hpp"
#include "cli_context.hpp"
#include "progress.hpp"
#include "file_io.hpp"
#include "output_report.hpp"
#include "tensor_format.hpp"

namespace aisrv::cli {

namespace {

// Per-operator times of the inference this invocation ran (its session's GET_TIMINGS / GET_TIMING_RECORD).
Status report_timings(CliContext& ctx, client::Client& c, bool summary, nlohmann::json& out) {
  const uint32_t e = ctx.options.engine;
  if (!summary) {
    const auto t = AISRV_TRY(c.timings(e));
    if (ctx.options.json) {
      out = {{"unit", "ns"}, {"timings", t}};
    } else {
      fmt::print("per-operator times:\n");
      for (size_t i = 0; i < t.size(); ++i) fmt::print("{:>4}: {:>12} ns\n", i, t[i]);
    }
    return ok();
  }
  const auto rec = AISRV_TRY(c.timing_record(e));
  uint64_t total = 0;
  for (const auto& l : rec.layers) total += l.ns;
  std::map<std::string, std::pair<uint64_t, unsigned>> by_type;
  for (const auto& l : rec.layers) {
    by_type[l.op].first += l.ns;
    by_type[l.op].second++;
  }
  auto share = [&](uint64_t ns) { return total ? 100.0 * static_cast<double>(ns) / static_cast<double>(total) : 0.0; };
  if (ctx.options.json) {
    nlohmann::json layers = nlohmann::json::array();
    for (size_t i = 0; i < rec.layers.size(); ++i)
      layers.push_back({{"index", i}, {"name", rec.layers[i].name}, {"op", rec.layers[i].op},
                        {"ns", rec.layers[i].ns}, {"share", share(rec.layers[i].ns)}});
    nlohmann::json types = nlohmann::json::object();
    for (const auto& [op, v] : by_type) types[op] = {{"ns", v.first}, {"count", v.second}, {"share", share(v.first)}};
    out = {{"queue_ns", rec.queue_ns}, {"compute_ns", rec.compute_ns}, {"total_ns", rec.total_ns},
           {"layers", layers},         {"by_type", types}};
    return ok();
  }
  fmt::print("{:>4}  {:<28} {:<34} {:>12} {:>7}\n", "#", "operator", "output", "time (us)", "share");
  for (size_t i = 0; i < rec.layers.size(); ++i) {
    const auto& l = rec.layers[i];
    fmt::print("{:>4}  {:<28} {:<34} {:>12.1f} {:>6.1f}%\n", i, l.op, l.name.substr(0, 34),
               static_cast<double>(l.ns) / 1e3, share(l.ns));
  }
  fmt::print("\nby operator type:\n");
  std::vector<std::pair<std::string, std::pair<uint64_t, unsigned>>> sorted(by_type.begin(), by_type.end());
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  for (const auto& [op, v] : sorted)
    fmt::print("  {:<28} x{:<4} {:>12.1f} us {:>6.1f}%\n", op, v.second, static_cast<double>(v.first) / 1e3,
               share(v.first));
  fmt::print("\noperators {:.1f} us, inference {:.1f} us, queued {:.1f} us, total {:.1f} us\n",
             static_cast<double>(total) / 1e3, static_cast<double>(rec.compute_ns) / 1e3,
             static_cast<double>(rec.queue_ns) / 1e3, static_cast<double>(rec.total_ns) / 1e3);
  return ok();
}

// --crop: "WxH+X+Y" (a window in pixels) or "centre" (the largest centred window of the input's aspect ratio).
Result<std::optional<image::Crop>> parse_crop(const std::string& text, const image::Image& picture,
                                              const image::InputGeometry& g) {
  if (text.empty()) return std::optional<image::Crop>{};
  if (text == "centre" || text == "center") return std::optional<image::Crop>{image::centre_crop(picture, g.width, g.height)};
  image::Crop c;
  char x = 0, p1 = 0, p2 = 0;
  std::istringstream in(text);
  if (!(in >> c.width >> x >> c.height >> p1 >> c.x >> p2 >> c.y) || x != 'x' || p1 != '+' || p2 != '+' || !in.eof())
    return make_error(Errc::invalid_argument, "--crop '{}': expected WxH+X+Y or centre", text);
  return std::optional<image::Crop>{c};
}

}  // namespace

void add_inference_commands(CLI::App& app, CliContext& ctx) {
  struct InferArgs {
    std::vector<std::string> inputs, images, save_inputs;
    OutputArgs out;
    std::vector<size_t> only;  // output indices to report (default all)
    bool timings = false, summary = false;
    std::vector<float> mean, std;
    bool bgr = false;
    std::string layout, crop;
  };
  auto ia = std::make_shared<InferArgs>();
  auto* infer = app.add_subcommand(
      "infer", "Run an inference on raw input tensors (--input) or pictures (--image) and print the outputs: one INFER "
               "round trip when the server offers it, else SET_INPUT_TENSOR, START_INFER, GET_OUTPUT_TENSOR. Outputs "
               "and timings belong to this invocation's session: ask for them here (--output, --timings)");
  auto* raw = infer->add_option("-i,--input", ia->inputs,
                                "Raw bytes of input tensor 0, 1, ... (repeat for several inputs; inputs not given are "
                                "zeros)");
  auto* pictures = infer->add_option(
      "--image", ia->images,
      "A JPEG, PNG, BMP or PPM/PGM picture for input 0, 1, ... (repeat). More pictures than inputs make a batch: one "
      "inference per group of as many pictures as the model has inputs. Resized (bilinear, half-pixel centres), laid "
      "out (NHWC/NCHW from the input's shape) and converted to its type (see --mean/--std)");
  raw->excludes(pictures);
  pictures->excludes(raw);
  infer->add_option("--mean", ia->mean,
                    "With --image: subtract from each channel (one value, or one per channel, e.g. 127.5 or "
                    "123.7,116.3,103.5), then divide by --std; the result is quantized with the input's scale and zero "
                    "point. Without --mean/--std: uint8 inputs take the pixels, int8 the pixels - 128, float32 "
                    "pixels / 255")
      ->delimiter(',');
  infer->add_option("--std", ia->std, "With --image: divide each channel by this after --mean (default 1)")
      ->delimiter(',');
  infer->add_flag("--bgr", ia->bgr, "With --image: channel order B, G, R (models trained on OpenCV/Caffe pictures)");
  infer->add_option("--layout", ia->layout, "With --image: nhwc or nchw when the input's shape fits both")
      ->check(CLI::IsMember({"nhwc", "nchw"}));
  infer->add_option("--crop", ia->crop,
                    "With --image: use the window WxH+X+Y of each picture, or 'centre' for the largest centred window "
                    "of the input's aspect ratio (default: the whole picture, stretched)");
  infer->add_option("--save-input", ia->save_inputs,
                    "Write the input tensor 0, 1, ... as sent (after picture conversion) to these files (the first "
                    "inference of a batch)");
  infer->add_option("-o,--output", ia->out.outputs, "Write output tensor 0, 1, ... (or those of --tensor) to these files");
  infer->add_option("-t,--tensor", ia->only, "Report only these output indices (repeatable; default: all)");
  infer->add_option("--labels", ia->out.labels, "Label file, one per line, to name output indices");
  infer->add_option("--top", ia->out.top, "How many of the largest outputs to print")->check(CLI::Range(1u, 1000u));
  infer->add_flag("--timings", ia->timings, "Also print the per-operator times of this inference (GET_TIMINGS)");
  infer->add_flag("--summary", ia->summary,
                  "Also print a profiler summary: each operator with its type, time and share, then totals per "
                  "operator type (GET_TIMING_RECORD)");
  infer->callback([&ctx, ia] {
    ctx.run([&]() -> Status {
      if (ia->inputs.empty() && ia->images.empty())
        return make_error(Errc::invalid_argument, "infer needs --input files or --image pictures");
      const bool picture_options = !ia->mean.empty() || !ia->std.empty() || ia->bgr || !ia->layout.empty() ||
                                   !ia->crop.empty();
      if (picture_options && ia->images.empty())
        return make_error(Errc::invalid_argument, "--mean, --std, --bgr, --layout and --crop apply to --image only");
      std::vector<std::vector<uint8_t>> files;
      for (const auto& f : ia->inputs) files.push_back(AISRV_TRY(read_file(f)));
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      const auto info = AISRV_TRY(c->tensor_info(e));
      const size_t n_inputs = info.inputs.size();
      if (files.size() > n_inputs)
        return make_error(Errc::invalid_argument, "{} input files given; the model has {} input(s)", files.size(),
                          n_inputs);
      if (!ia->images.empty() && (n_inputs == 0 || ia->images.size() % n_inputs != 0))
        return make_error(Errc::invalid_argument,
                          "{} picture(s) given; the model has {} input(s): give a multiple of {} (one group per "
                          "inference)",
                          ia->images.size(), n_inputs, n_inputs);
      for (size_t i : ia->only)
        if (i >= info.outputs.size())
          return make_error(Errc::invalid_argument, "output tensor {} does not exist (the model has {})", i,
                            info.outputs.size());
      image::Preprocess pre;
      pre.mean = ia->mean;
      pre.std = ia->std;
      pre.bgr = ia->bgr;
      if (!ia->layout.empty()) pre.layout = ia->layout == "nchw" ? image::Layout::nchw : image::Layout::nhwc;
      std::vector<image::InputGeometry> geometry;
      if (!ia->images.empty())
        for (const auto& t : info.inputs) geometry.push_back(AISRV_TRY(image::input_geometry(t, pre.layout)));

      // The tensors of inference `g`: raw files (missing ones are zeros, as the server treats inputs a session never
      // wrote) or converted pictures.
      auto group_inputs = [&](size_t g) -> Result<std::vector<std::vector<uint8_t>>> {
        std::vector<std::vector<uint8_t>> tensors(n_inputs);
        for (size_t i = 0; i < n_inputs; ++i) {
          if (ia->images.empty()) {
            tensors[i] = i < files.size() ? files[i] : std::vector<uint8_t>(info.inputs[i].bytes, 0);
            continue;
          }
          const auto& path = ia->images[g * n_inputs + i];
          const auto picture = AISRV_TRY(image::read_image(path));
          image::Preprocess p = pre;
          p.crop = AISRV_TRY(parse_crop(ia->crop, picture, geometry[i]));
          auto t = image::image_to_tensor(picture, info.inputs[i], p);
          if (!t) return make_error(t.error().code, "{}: {}", path, t.error().message);
          tensors[i] = std::move(*t);
        }
        return tensors;
      };

      std::vector<size_t> which = ia->only;
      if (which.empty())
        for (size_t i = 0; i < info.outputs.size(); ++i) which.push_back(i);
      const auto labels = AISRV_TRY(read_labels(ia->out.labels));
      const size_t groups = ia->images.empty() ? 1 : ia->images.size() / n_inputs;
      ProgressBar bar(!ctx.options.json && groups > 1, "inferences", ProgressBar::Unit::items);
      nlohmann::json results = nlohmann::json::array();
      std::vector<std::vector<uint8_t>> outputs;
      for (size_t g = 0; g < groups; ++g) {
        const auto tensors = AISRV_TRY(group_inputs(g));
        if (g == 0)
          for (size_t i = 0; i < ia->save_inputs.size() && i < tensors.size(); ++i)
            AISRV_TRY(write_file(ia->save_inputs[i], tensors[i]));
        std::vector<std::span<const uint8_t>> inputs(tensors.begin(), tensors.end());
        AISRV_TRY(c->infer(e, inputs, outputs));
        if (outputs.size() != info.outputs.size())
          return make_error(Errc::protocol_error, "the server answered {} outputs; the model has {}", outputs.size(),
                            info.outputs.size());
        nlohmann::json pics = nlohmann::json::array();
        if (!ia->images.empty())
          for (size_t i = 0; i < n_inputs; ++i) pics.push_back(ia->images[g * n_inputs + i]);
        if (groups > 1 && !ctx.options.json) {
          if (bar.active()) bar.finish();
          fmt::print("{}:\n", fmt::join(pics.get<std::vector<std::string>>(), ", "));
        }
        nlohmann::json outs = nlohmann::json::array();
        for (size_t n = 0; n < which.size(); ++n) {
          const size_t i = which[n];
          if (g == 0 && n < ia->out.outputs.size()) AISRV_TRY(write_file(ia->out.outputs[n], outputs[i]));
          outs.push_back(report_output(info.outputs[i], i, outputs[i], ia->out, labels, ctx.options.json));
        }
        nlohmann::json r{{"outputs", outs}};
        if (!pics.empty()) r["images"] = pics;
        results.push_back(std::move(r));
        bar.update(g + 1, groups);
      }
      bar.finish();
      nlohmann::json timing;
      if (ia->timings || ia->summary) AISRV_TRY(report_timings(ctx, *c, ia->summary, timing));
      if (ctx.options.json) {
        nlohmann::json j{{"engine", e}};
        if (groups == 1) {
          j["outputs"] = results[0]["outputs"];
          if (results[0].contains("images")) j["images"] = results[0]["images"];
        } else {
          j["results"] = results;
        }
        if (!timing.is_null()) j[ia->summary ? "summary" : "timings"] = timing;
        ctx.print_json(j);
      }
      return ok();
    });
  });
}

}  // namespace aisrv::cli
