// aisrv CLI — inference commands: infer, get-output, timings.
#include <fmt/format.h>

#include <fstream>
#include <map>

#include "cli_context.hpp"
#include "file_io.hpp"
#include "tensor_format.hpp"

namespace aisrv::cli {

namespace {

struct OutputArgs {
  std::vector<std::string> outputs;  // files for output tensors 0, 1, ...
  std::string labels;                // one label per line
  unsigned top = 5;
};

Result<std::vector<std::string>> read_labels(const std::string& path) {
  std::vector<std::string> labels;
  if (path.empty()) return labels;
  std::ifstream in(path);
  if (!in) return make_error(Errc::invalid_argument, "cannot read labels file {}", path);
  for (std::string line; std::getline(in, line);) labels.push_back(line);
  return labels;
}

// Prints or collects one output tensor; returns its JSON form.
nlohmann::json report_output(const protocol::TensorInfo& t, size_t index, std::span<const uint8_t> bytes,
                             const OutputArgs& args, const std::vector<std::string>& labels, bool json) {
  const auto raw = element_values(t, bytes);
  const auto values = dequantized(t, bytes);
  nlohmann::json j{{"index", index}, {"name", t.name}, {"dtype", std::string(protocol::dtype_name(t.dtype))},
                   {"shape", t.shape}, {"bytes", bytes.size()}};
  auto label_of = [&](size_t i) { return i < labels.size() ? labels[i] : std::string(); };
  if (values.size() <= 10) {
    j["raw"] = raw;
    j["values"] = values;
    if (!json) {
      std::string line;
      for (size_t i = 0; i < values.size(); ++i)
        line += fmt::format("{}{}: {:g} ({:g}){}", i ? ", " : "", i, raw[i], values[i],
                            label_of(i).empty() ? "" : " [" + label_of(i) + "]");
      fmt::print("output {} '{}' {}: {}\n", index, t.name, shape_text(t.shape), line);
    }
  } else if (!json) {
    fmt::print("output {} '{}' {} ({} values), top {}:\n", index, t.name, shape_text(t.shape), values.size(), args.top);
  }
  if (!values.empty()) {
    const auto best = top_k(values, args.top);
    nlohmann::json top = nlohmann::json::array();
    for (size_t i : best) {
      top.push_back({{"index", i}, {"raw", raw[i]}, {"value", values[i]}, {"label", label_of(i)}});
      if (!json && values.size() > 10)
        fmt::print("  {:>6}: {:>10.6f} (raw {:g}){}\n", i, values[i], raw[i],
                   label_of(i).empty() ? "" : "  " + label_of(i));
    }
    j["top"] = top;
    if (!json && values.size() <= 10 && values.size() > 1)
      fmt::print("  argmax: {}{}\n", best[0], label_of(best[0]).empty() ? "" : " [" + label_of(best[0]) + "]");
  }
  return j;
}

Status fetch_and_report(CliContext& ctx, client::Client& c, const protocol::ModelTensors& info,
                        const std::vector<size_t>& which, const OutputArgs& args) {
  const auto labels = AISRV_TRY(read_labels(args.labels));
  nlohmann::json outs = nlohmann::json::array();
  for (size_t n = 0; n < which.size(); ++n) {
    const size_t i = which[n];
    const auto bytes = AISRV_TRY(c.get_output(ctx.options.engine, static_cast<uint32_t>(i)));
    if (n < args.outputs.size()) AISRV_TRY(write_file(args.outputs[n], bytes));
    outs.push_back(report_output(info.outputs[i], i, bytes, args, labels, ctx.options.json));
  }
  if (ctx.options.json) ctx.print_json({{"engine", ctx.options.engine}, {"outputs", outs}});
  return ok();
}

}  // namespace

void add_inference_commands(CLI::App& app, CliContext& ctx) {
  struct InferArgs {
    std::vector<std::string> inputs;
    OutputArgs out;
  };
  auto ia = std::make_shared<InferArgs>();
  auto* infer = app.add_subcommand(
      "infer", "Write the input tensor(s), run one inference and read the outputs (SET_INPUT_TENSOR, START_INFER, "
               "GET_OUTPUT_TENSOR)");
  infer->add_option("-i,--input", ia->inputs, "Raw bytes of input tensor 0, 1, ... (repeat for several inputs)")
      ->required();
  infer->add_option("-o,--output", ia->out.outputs, "Write output tensor 0, 1, ... to these files");
  infer->add_option("--labels", ia->out.labels, "Label file, one per line, to name output indices");
  infer->add_option("--top", ia->out.top, "How many of the largest outputs to print")->check(CLI::Range(1u, 1000u));
  infer->callback([&ctx, ia] {
    ctx.run([&]() -> Status {
      std::vector<std::vector<uint8_t>> inputs;
      for (const auto& f : ia->inputs) inputs.push_back(AISRV_TRY(read_file(f)));
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      const auto info = AISRV_TRY(c->tensor_info(e));
      if (inputs.size() > info.inputs.size())
        return make_error(Errc::invalid_argument, "{} input files given; the model has {} input(s)", inputs.size(),
                          info.inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) AISRV_TRY(c->set_input(e, static_cast<uint32_t>(i), inputs[i]));
      AISRV_TRY(c->start_inference(e));
      std::vector<size_t> all(info.outputs.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      return fetch_and_report(ctx, *c, info, all, ia->out);
    });
  });

  struct GetArgs {
    uint32_t tensor = 0;
    std::string output;
    OutputArgs out;
  };
  auto ga = std::make_shared<GetArgs>();
  auto* get = app.add_subcommand("get-output", "Read an output tensor of the last inference (GET_OUTPUT_TENSOR)");
  get->add_option("-t,--tensor", ga->tensor, "Output tensor index");
  get->add_option("-o,--output", ga->output, "Write the raw bytes to this file");
  get->add_option("--labels", ga->out.labels, "Label file, one per line");
  get->add_option("--top", ga->out.top, "How many of the largest outputs to print")->check(CLI::Range(1u, 1000u));
  get->callback([&ctx, ga] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const auto info = AISRV_TRY(c->tensor_info(ctx.options.engine));
      if (ga->tensor >= info.outputs.size())
        return make_error(Errc::invalid_argument, "output tensor {} does not exist (the model has {})", ga->tensor,
                          info.outputs.size());
      OutputArgs out = ga->out;
      if (!ga->output.empty()) out.outputs = {ga->output};
      return fetch_and_report(ctx, *c, info, {ga->tensor}, out);
    });
  });

  auto summary = std::make_shared<bool>(false);
  auto* timings = app.add_subcommand("timings", "Per-operator times of the last inference (GET_TIMINGS)");
  timings->add_flag("--summary", *summary,
                    "Profiler summary: each operator with its type, time and share, then totals per operator type");
  timings->callback([&ctx, summary] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      if (!*summary) {
        const auto t = AISRV_TRY(c->timings(e));
        if (ctx.options.json) {
          ctx.print_json({{"engine", e}, {"unit", "ns"}, {"timings", t}});
        } else {
          for (size_t i = 0; i < t.size(); ++i) fmt::print("{:>4}: {:>12} ns\n", i, t[i]);
        }
        return ok();
      }
      const auto rec = AISRV_TRY(c->timing_record(e));
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
        ctx.print_json({{"engine", e}, {"queue_ns", rec.queue_ns}, {"compute_ns", rec.compute_ns},
                        {"total_ns", rec.total_ns}, {"layers", layers}, {"by_type", types}});
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
    });
  });
}

}  // namespace aisrv::cli
