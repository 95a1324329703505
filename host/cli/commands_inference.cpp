// aisrv CLI — the inference command: infer (raw tensors or pictures from files, batches of pictures; what the model
// found in words, as JSON or drawn on the picture (engine/results decodes the outputs), or the raw outputs printed or
// written; optional timings).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "aisrv/image/image.hpp"
#include "aisrv/image/tensor_image.hpp"
#include "aisrv/results/results.hpp"
#include "cli_context.hpp"
#include "draw.hpp"
#include "progress.hpp"
#include "file_io.hpp"
#include "output_report.hpp"
#include "results_report.hpp"
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

// A number from the model's metadata (preprocess.mean / preprocess.std), if it has a usable one.
std::optional<float> metadata_number(const protocol::ModelMetadata& m, std::string_view key) {
  const std::string* v = m.find(key);
  if (!v) return std::nullopt;
  try {
    size_t used = 0;
    const float f = std::stof(*v, &used);
    if (used == v->size() && std::isfinite(f)) return f;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// How pictures go into this model: the options given, else what the model's metadata says (Ultralytics exports:
// letterbox, RGB / 255), else the defaults of image::Preprocess.
image::Preprocess picture_preprocess(const image::Preprocess& given, const std::string& fit, bool normalise_given,
                                     const protocol::ModelMetadata& meta) {
  image::Preprocess p = given;
  const std::string* model_fit = meta.find("preprocess.fit");
  if (fit == "letterbox" || (fit.empty() && model_fit && *model_fit == "letterbox")) p.fit = image::Fit::letterbox;
  if (!normalise_given) {
    if (auto mean = metadata_number(meta, "preprocess.mean")) p.mean = {*mean};
    if (auto stdev = metadata_number(meta, "preprocess.std"); stdev && *stdev != 0) p.std = {*stdev};
  }
  return p;
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
    std::string layout, crop, fit;
    std::string task = "auto", draw;
    float threshold = -1, iou = 0.7f;
    size_t max_results = 0;
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
      "A JPEG, PNG, BMP or PPM/PGM picture for each picture input (repeat; inputs that cannot hold a picture, such as "
      "a recurrent model's state, get zeros). More pictures make a batch: one inference per group of as many pictures "
      "as the model has picture inputs. Resized (bilinear, half-pixel centres; see --fit), laid out (NHWC/NCHW from "
      "the input's shape) and converted to its type (see --mean/--std)");
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
  infer->add_option("--fit", ia->fit,
                    "With --image: stretch (the picture fills the input) or letterbox (aspect kept, centred on grey "
                    "114, as Ultralytics feeds YOLO models). Default: what the model's metadata says "
                    "(GET_MODEL_METADATA), else stretch")
      ->check(CLI::IsMember({"stretch", "letterbox"}));
  infer->add_option("--task", ia->task,
                    "What to make of the outputs: auto (with --image: recognised from the model's outputs and "
                    "metadata; with --input: raw), classification, detection, segmentation, pose, or raw (print the "
                    "output tensors' values)")
      ->check(CLI::IsMember({"auto", "classification", "classify", "detection", "detect", "segmentation", "segment",
                             "pose", "raw"}));
  infer->add_option("--threshold", ia->threshold,
                    "Smallest score reported (default: detection 0.25, classification none)")
      ->check(CLI::Range(0.0f, 1.0f));
  infer->add_option("--iou", ia->iou, "YOLO detections: IoU above which non-maximum suppression drops the weaker box "
                                      "(default 0.7, as Ultralytics)")
      ->check(CLI::Range(0.0f, 1.0f));
  infer->add_option("--max", ia->max_results, "Most results reported (default: detection 300, classification 5)");
  infer->add_option("--draw", ia->draw,
                    "With --image: write the picture with what the model found drawn on it (boxes and labels, the "
                    "mask, the skeleton, the top classes) to this PNG file (the first inference of a batch)");
  infer->add_option("--crop", ia->crop,
                    "With --image: use the window WxH+X+Y of each picture, or 'centre' for the largest centred window "
                    "of the input's aspect ratio (default: the whole picture, stretched)");
  infer->add_option("--save-input", ia->save_inputs,
                    "Write the input tensor 0, 1, ... as sent (after picture conversion) to these files (the first "
                    "inference of a batch)");
  infer->add_option("-o,--output", ia->out.outputs, "Write output tensor 0, 1, ... (or those of --tensor) to these files");
  infer->add_option("-t,--tensor", ia->only, "Report only these output indices (repeatable; default: all)");
  infer->add_option("--labels", ia->out.labels,
                    "Label file naming the classes: one name per line (line i = class i), or 'ID name' lines; "
                    "default: the labels packed with the model, if any");
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
                                   !ia->crop.empty() || !ia->fit.empty() || !ia->draw.empty();
      if (picture_options && ia->images.empty())
        return make_error(Errc::invalid_argument,
                          "--mean, --std, --bgr, --layout, --crop, --fit and --draw apply to --image only");
      std::vector<std::vector<uint8_t>> files;
      for (const auto& f : ia->inputs) files.push_back(AISRV_TRY(read_file(f)));
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      const auto info = AISRV_TRY(c->tensor_info(e));
      const size_t n_inputs = info.inputs.size();
      if (files.size() > n_inputs)
        return make_error(Errc::invalid_argument, "{} input files given; the model has {} input(s)", files.size(),
                          n_inputs);
      for (size_t i : ia->only)
        if (i >= info.outputs.size())
          return make_error(Errc::invalid_argument, "output tensor {} does not exist (the model has {})", i,
                            info.outputs.size());
      const auto meta = AISRV_TRY(c->model_metadata(e));
      image::Preprocess given;
      given.mean = ia->mean;
      given.std = ia->std;
      given.bgr = ia->bgr;
      if (!ia->layout.empty()) given.layout = ia->layout == "nchw" ? image::Layout::nchw : image::Layout::nhwc;
      const image::Preprocess pre =
          picture_preprocess(given, ia->fit, !ia->mean.empty() || !ia->std.empty(), meta);

      // Decoding: what the model found, unless raw tensors are asked for (or given without --task).
      const bool decode = ia->task != "raw" && (ia->task != "auto" || !ia->images.empty());
      results::ModelDescription model{info.inputs, info.outputs, meta.entries};
      results::Options ro;
      if (ia->task != "auto" && ia->task != "raw") ro.task = results::task_from_name(ia->task);
      ro.threshold = ia->threshold;
      ro.iou_threshold = ia->iou;
      ro.max_results = ia->max_results;
      // The inputs that hold pictures (the others, e.g. a recurrent model's state, get zeros); pictures fill them in
      // groups, one group per inference.
      std::vector<std::optional<image::InputGeometry>> geometry(n_inputs);
      std::vector<size_t> picture_inputs;
      if (!ia->images.empty()) {
        Status first_refusal = ok();
        for (size_t i = 0; i < n_inputs; ++i) {
          auto g = image::input_geometry(info.inputs[i], pre.layout);
          if (g) {
            geometry[i] = *g;
            picture_inputs.push_back(i);
          } else if (first_refusal) {
            first_refusal = std::move(g).error();
          }
        }
        if (picture_inputs.empty()) return first_refusal;
        if (ia->images.size() % picture_inputs.size() != 0)
          return make_error(Errc::invalid_argument,
                            "{} picture(s) given; the model has {} picture input(s): give a multiple of {} (one group "
                            "per inference)",
                            ia->images.size(), picture_inputs.size(), picture_inputs.size());
      }
      const size_t per_group = std::max<size_t>(picture_inputs.size(), 1);

      // The tensors of inference `g`: raw files (missing ones are zeros, as the server treats inputs a session never
      // wrote) or converted pictures; for pictures also the first picture and where it lies in its input.
      struct GroupInputs {
        std::vector<std::vector<uint8_t>> tensors;
        std::optional<image::Image> picture;
        std::optional<image::Placement> placement;
      };
      auto group_inputs = [&](size_t g) -> Result<GroupInputs> {
        GroupInputs in;
        in.tensors.resize(n_inputs);
        for (size_t i = 0; i < n_inputs; ++i) {
          if (ia->images.empty() || !geometry[i]) {
            in.tensors[i] = i < files.size() ? files[i] : std::vector<uint8_t>(info.inputs[i].bytes, 0);
            continue;
          }
          const size_t slot = static_cast<size_t>(
              std::find(picture_inputs.begin(), picture_inputs.end(), i) - picture_inputs.begin());
          const auto& path = ia->images[g * per_group + slot];
          auto picture = AISRV_TRY(image::read_image(path));
          image::Preprocess p = pre;
          p.crop = AISRV_TRY(parse_crop(ia->crop, picture, *geometry[i]));
          auto t = image::image_to_tensor(picture, info.inputs[i], p);
          if (!t) return make_error(t.error().code, "{}: {}", path, t.error().message);
          in.tensors[i] = std::move(*t);
          if (!in.picture) {
            in.placement = AISRV_TRY(image::placement(picture, *geometry[i], p));
            in.picture = std::move(picture);
          }
        }
        return in;
      };

      std::vector<size_t> which = ia->only;
      if (which.empty())
        for (size_t i = 0; i < info.outputs.size(); ++i) which.push_back(i);
      const auto labels = AISRV_TRY(read_labels(ia->out.labels));
      ro.labels = labels;
      const size_t groups = ia->images.empty() ? 1 : ia->images.size() / per_group;
      ProgressBar bar(!ctx.options.json && groups > 1, "inferences", ProgressBar::Unit::items);
      nlohmann::json results = nlohmann::json::array();
      std::vector<std::vector<uint8_t>> outputs;
      for (size_t g = 0; g < groups; ++g) {
        const auto group = AISRV_TRY(group_inputs(g));
        const auto& tensors = group.tensors;
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
          for (size_t i = 0; i < per_group; ++i) pics.push_back(ia->images[g * per_group + i]);
        if (groups > 1 && !ctx.options.json) {
          if (bar.active()) bar.finish();
          fmt::print("{}:\n", fmt::join(pics.get<std::vector<std::string>>(), ", "));
        }
        for (size_t n = 0; n < which.size() && g == 0; ++n)
          if (n < ia->out.outputs.size()) AISRV_TRY(write_file(ia->out.outputs[n], outputs[which[n]]));
        nlohmann::json r;
        bool raw_report = !decode;
        if (decode) {
          results::Options go = ro;
          go.placement = group.placement;
          auto found = results::decode(model, outputs, go);
          if (found) {
            r["found"] = report_results(*found, ctx.options.json);
            if (g == 0 && !ia->draw.empty()) {
              if (!group.picture) return make_error(Errc::invalid_argument, "--draw needs --image");
              AISRV_TRY(draw_results(*group.picture, *found, ia->draw));
              if (!ctx.options.json) fmt::print("drawn: {}\n", ia->draw);
            }
          } else if (ia->task != "auto") {
            return make_error(found.error().code, "--task {}: {}", ia->task, found.error().message);
          } else {
            if (!ctx.options.json)
              fmt::print("the outputs are not ones aisrv can read as classes, boxes, a mask or keypoints ({}); the "
                         "raw outputs follow (--task chooses a decoder)\n",
                         found.error().message);
            r["found_error"] = found.error().message;
            raw_report = true;
          }
        }
        // The raw outputs: printed when nothing was decoded; in the JSON always (beside the results).
        if (raw_report || ctx.options.json) {
          const bool quiet = !raw_report || ctx.options.json;
          nlohmann::json outs = nlohmann::json::array();
          for (size_t i : which) outs.push_back(report_output(info.outputs[i], i, outputs[i], ia->out, labels, quiet));
          r["outputs"] = outs;
        }
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
          for (const char* key : {"outputs", "found", "found_error", "images"})
            if (results[0].contains(key)) j[key] = results[0][key];
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
