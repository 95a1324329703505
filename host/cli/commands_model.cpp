// aisrv CLI — model commands: load, unload, spec, tensors.
#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "cli_context.hpp"
#include "progress.hpp"
#include "file_io.hpp"
#include "tensor_format.hpp"

namespace aisrv::cli {

namespace {

void print_tensors(const protocol::ModelTensors& m) {
  fmt::print("model: format {}, {} bytes, arena {} bytes\n", m.format, m.model_bytes, m.arena_bytes);
  auto list = [](const char* kind, const std::vector<protocol::TensorInfo>& ts) {
    for (size_t i = 0; i < ts.size(); ++i) {
      const auto& t = ts[i];
      fmt::print("{} {}: {} {} {} ({} bytes), {}\n", kind, i, t.name.empty() ? "(unnamed)" : t.name,
                 protocol::dtype_name(t.dtype), shape_text(t.shape), t.bytes, quant_text(t));
    }
  };
  list("input", m.inputs);
  list("output", m.outputs);
}

nlohmann::json tensors_json(const protocol::ModelTensors& m) {
  nlohmann::json j{{"format", m.format}, {"model_bytes", m.model_bytes}, {"arena_bytes", m.arena_bytes}};
  j["inputs"] = nlohmann::json::array();
  j["outputs"] = nlohmann::json::array();
  for (const auto& t : m.inputs) j["inputs"].push_back(tensor_json(t));
  for (const auto& t : m.outputs) j["outputs"].push_back(tensor_json(t));
  return j;
}

}  // namespace

void add_model_commands(CLI::App& app, CliContext& ctx) {
  struct LoadArgs {
    std::string file;
    bool arena = false;
  };
  auto load_args = std::make_shared<LoadArgs>();
  auto* load = app.add_subcommand("load", "Send a model to the engine (SET_MODEL_SECONDARY, or PRIMARY with --arena)");
  load->add_option("MODEL", load_args->file, "Model file (.tflite, .hef)")->required();
  load->add_flag("--arena", load_args->arena, "Place the model inside the engine's arena budget (SET_MODEL_PRIMARY)");
  load->callback([&ctx, load_args] {
    ctx.run([&]() -> Status {
      const auto bytes = AISRV_TRY(read_file(load_args->file));
      auto* c = AISRV_TRY(ctx.client());
      const uint32_t e = ctx.options.engine;
      ProgressBar bar(!ctx.options.json, fmt::format("engine {}: uploading", e));
      AISRV_TRY(c->load_model(e, bytes, load_args->arena ? client::Placement::arena : client::Placement::external,
                              [&bar](uint64_t sent, uint64_t total) { bar.update(sent, total); }));
      bar.finish();
      const auto info = AISRV_TRY(c->tensor_info(e));
      if (ctx.options.json) {
        ctx.print_json({{"loaded", load_args->file}, {"engine", e}, {"tensors", tensors_json(info)}});
      } else {
        fmt::print("loaded {} ({} bytes) on engine {}\n", load_args->file, bytes.size(), e);
        print_tensors(info);
      }
      return ok();
    });
  });

  app.add_subcommand("unload", "Unload the engine's model (UNLOAD_MODEL)")->callback([&ctx] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      AISRV_TRY(c->unload_model(ctx.options.engine));
      if (ctx.options.json) ctx.print_json({{"unloaded", true}, {"engine", ctx.options.engine}});
      else fmt::print("engine {}: model unloaded\n", ctx.options.engine);
      return ok();
    });
  });

  auto spec_tensor = std::make_shared<uint32_t>(0);
  auto* spec = app.add_subcommand("spec", "Print the XMOS spec words (GET_SPEC)");
  spec->add_option("-t,--tensor", *spec_tensor, "Tensor index");
  spec->callback([&ctx, spec_tensor] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const auto s = AISRV_TRY(c->spec(ctx.options.engine, *spec_tensor));
      if (ctx.options.json)
        ctx.print_json({{"input_length", s.input_length},
                        {"output_length", s.output_length},
                        {"timings_length", s.timings_length}});
      else
        fmt::print("input length: {} bytes\noutput length: {} bytes\ntimings length: {} bytes\n", s.input_length,
                   s.output_length, s.timings_length);
      return ok();
    });
  });

  app.add_subcommand("tensors", "Describe the model's input and output tensors (GET_TENSOR_INFO)")->callback([&ctx] {
    ctx.run([&]() -> Status {
      auto* c = AISRV_TRY(ctx.client());
      const auto info = AISRV_TRY(c->tensor_info(ctx.options.engine));
      if (ctx.options.json) ctx.print_json(tensors_json(info));
      else print_tensors(info);
      return ok();
    });
  });
}

}  // namespace aisrv::cli
