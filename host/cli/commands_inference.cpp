// aisrv CLI — the inference command: infer (inputs from files, outputs printed or written, optional timings).
#include <fmt/format.h>

#include <algorithm>
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

}  // namespace

void add_inference_commands(CLI::App& app, CliContext& ctx) {
  struct InferArgs {
    std::vector<std::string> inputs;
    OutputArgs out;
    std::vector<size_t> only;  // output indices to report (default all)
    bool timings = false, summary = false;
  };
  auto ia = std::make_shared<InferArgs>();
  auto* infer = app.add_subcommand(
      "infer", "Run one inference on the given input tensor(s) and print the outputs: one INFER round trip when the "
               "server offers it, else SET_INPUT_TENSOR, START_INFER, GET_OUTPUT_TENSOR. Outputs and timings belong "
               "to this invocation's session: ask for them here (--output, --timings)");
  infer->add_option("-i,--input", ia->inputs,
                    "Raw bytes of input tensor 0, 1, ... (repeat for several inputs; inputs not given are zeros)")
      ->required();
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
      std::vector<std::vector<uint8_t>> files;
      for (const auto& f : ia->inputs) files.push_back(AISRV_TRY(read_file(f)));
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      const auto info = AISRV_TRY(c->tensor_info(e));
      if (files.size() > info.inputs.size())
        return make_error(Errc::invalid_argument, "{} input files given; the model has {} input(s)", files.size(),
                          info.inputs.size());
      for (size_t i : ia->only)
        if (i >= info.outputs.size())
          return make_error(Errc::invalid_argument, "output tensor {} does not exist (the model has {})", i,
                            info.outputs.size());
      // Inputs without a file are zeros, as the server treats inputs a session never wrote.
      files.resize(info.inputs.size());
      for (size_t i = 0; i < files.size(); ++i)
        if (i >= ia->inputs.size()) files[i].assign(info.inputs[i].bytes, 0);
      std::vector<std::span<const uint8_t>> inputs(files.begin(), files.end());
      std::vector<std::vector<uint8_t>> outputs;
      AISRV_TRY(c->infer(e, inputs, outputs));
      if (outputs.size() != info.outputs.size())
        return make_error(Errc::protocol_error, "the server answered {} outputs; the model has {}", outputs.size(),
                          info.outputs.size());
      std::vector<size_t> which = ia->only;
      if (which.empty())
        for (size_t i = 0; i < outputs.size(); ++i) which.push_back(i);
      const auto labels = AISRV_TRY(read_labels(ia->out.labels));
      nlohmann::json outs = nlohmann::json::array();
      for (size_t n = 0; n < which.size(); ++n) {
        const size_t i = which[n];
        if (n < ia->out.outputs.size()) AISRV_TRY(write_file(ia->out.outputs[n], outputs[i]));
        outs.push_back(report_output(info.outputs[i], i, outputs[i], ia->out, labels, ctx.options.json));
      }
      nlohmann::json timing;
      if (ia->timings || ia->summary) AISRV_TRY(report_timings(ctx, *c, ia->summary, timing));
      if (ctx.options.json) {
        nlohmann::json j{{"engine", e}, {"outputs", outs}};
        if (!timing.is_null()) j[ia->summary ? "summary" : "timings"] = timing;
        ctx.print_json(j);
      }
      return ok();
    });
  });
}

}  // namespace aisrv::cli
