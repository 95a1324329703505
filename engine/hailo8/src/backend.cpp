// aisrv hailo8 — the "hailo8" backend: HEF validation and tensor sizing at load, inference at invoke (device check
// through our driver layer -> libhailort -> network group configured once per model -> quantize float inputs -> write
// inputs -> read outputs -> dequantize float outputs).
#include "aisrv/engine/hailo8/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <unistd.h>

#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"
#include "aisrv/engine/hailo8/runtime/configured_network.hpp"
#include "device_check.hpp"
#include "host_tensor.hpp"

namespace aisrv::engine::hailo8 {
namespace {

using engine::InferenceBackend;
using engine::InvokeContext;
using engine::LoadOptions;
using engine::ModelInfo;

void log_line(const engine::LogFn& log, const std::string& line) {
  if (log) log(line);
}

uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
}

Result<FloatIo> parse_float_io(const std::string& value) {
  if (value == "in") return FloatIo{true, false};
  if (value == "out") return FloatIo{false, true};
  if (value == "both" || value == "on") return FloatIo{true, true};
  if (value == "none" || value == "off") return FloatIo{false, false};
  return make_error(Errc::invalid_argument, "float={} is not one of in, out, both, none", value);
}

std::string_view float_io_name(FloatIo io) {
  if (io.inputs && io.outputs) return "both";
  if (io.inputs) return "in";
  if (io.outputs) return "out";
  return "none";
}

class Hailo8Backend final : public InferenceBackend {
 public:
  explicit Hailo8Backend(Hailo8Options options) : options_(std::move(options)) {
    if (!options_.driver_opener) options_.driver_opener = std::make_shared<driver::LinuxDriverOpener>();
  }
  ~Hailo8Backend() override { unload(); }

  std::string_view kind() const override { return "hailo8"; }

  std::string options() const override {
    return fmt::format("device={},hailort={},float={}", options_.device.empty() ? "auto" : options_.device,
                       options_.hailort.empty() ? "auto" : options_.hailort, float_io_name(options_.float_io));
  }

  Result<ModelInfo> load(std::span<const uint8_t> model, const LoadOptions& load_options) override {
    unload();
    auto hef = hef::read_hef(model);
    if (!hef) return make_error(Errc::model_error, "HEF refused: {}", hef.error().message);
    if (!hef::runs_on_hailo8(hef->hw_arch))
      return make_error(Errc::model_error,
                        "HEF compiled for {} ({}); a Hailo-8 runs HEFs compiled for HAILO8P, HAILO8R or HAILO8L",
                        hef::hw_arch_name(hef->hw_arch), hef::device_arch_name(hef->device_arch()));
    if (hef->network_groups.size() != 1)
      return make_error(Errc::model_error, "HEF has {} network groups; this engine runs HEFs with exactly one",
                        hef->network_groups.size());
    const hef::NetworkGroup& group = hef->network_groups.front();
    auto ins = hef::input_vstream_infos(group);
    if (!ins) return make_error(Errc::model_error, "HEF refused: {}", ins.error().message);
    auto outs = hef::output_vstream_infos(group);
    if (!outs) return make_error(Errc::model_error, "HEF refused: {}", outs.error().message);

    // Every size first: nothing is allocated for a HEF whose shapes describe tensors the protocol cannot carry.
    for (const auto& v : *ins) AISRV_TRY(HostTensor::check_size(v, options_.float_io.inputs, load_options.max_tensor_bytes));
    for (const auto& v : *outs)
      AISRV_TRY(HostTensor::check_size(v, options_.float_io.outputs, load_options.max_tensor_bytes));
    std::vector<HostTensor> inputs, outputs;
    bool quantizes = false, dequantizes = false;
    for (const auto& v : *ins) {
      inputs.push_back(AISRV_TRY(HostTensor::input(v, options_.float_io.inputs)));
      quantizes = quantizes || inputs.back().conversion() != HostTensor::Conversion::none;
    }
    for (const auto& v : *outs) {
      outputs.push_back(AISRV_TRY(HostTensor::output(v, options_.float_io.outputs)));
      dequantizes = dequantizes || outputs.back().conversion() != HostTensor::Conversion::none;
    }

    ModelInfo info;
    info.format = "hef";
    // Timings: [quantize,] write, read[, dequantize].
    info.layer_count = 2 + (quantizes ? 1 : 0) + (dequantizes ? 1 : 0);
    for (const auto& t : inputs) info.inputs.push_back(t.desc());
    for (const auto& t : outputs) info.outputs.push_back(t.desc());
    // What a reader of an NMS output needs to walk its frame (HAILO_NMS_BY_CLASS: per class a count, then boxes).
    for (size_t k = 0; k < outs->size(); ++k) {
      const hef::VStreamInfo& v = (*outs)[k];
      if (!v.nms) continue;
      info.metadata.emplace_back("task", "detection");
      info.metadata.emplace_back("hailo.nms.output", std::to_string(k));
      info.metadata.emplace_back("hailo.nms.classes", std::to_string(v.nms->number_of_classes));
      info.metadata.emplace_back("hailo.nms.max_bboxes_per_class", std::to_string(v.nms->max_bboxes_per_class));
      break;  // one NMS output per network group (HailoRT's NMS ops have one)
    }

    const auto& log = load_options.log;
    log_line(log, fmt::format("hailo8: HEF v{} for {} (SDK {}), network group '{}', {} context(s), {} input(s), {} "
                              "output(s), float I/O {}",
                              hef->container.version, hef::hw_arch_name(hef->hw_arch), hef->sdk_version, group.name,
                              group.context_count, info.inputs.size(), info.outputs.size(),
                              float_io_name(options_.float_io)));
    hef_hint_.clear();
    if (!hef->periph_calculation_in_hailort) {
      hef_hint_ = "the HEF lacks the PERIPH_CALCULATION_IN_HAILORT extension, which HailoRT 4.14 and later require";
      log_line(log, "hailo8: warning: " + hef_hint_);
    }
    if (!hef->unsupported_extensions.empty()) {
      std::string list;
      for (const auto& e : hef->unsupported_extensions) list += (list.empty() ? "" : ", ") + e;
      hef_hint_ = "the HEF uses extensions HailoRT 4.23 does not know: " + list;
      log_line(log, "hailo8: warning: " + hef_hint_);
    }
    if (hef->hw_arch == hef::HwArch::hailo8l)
      log_line(log, "hailo8: note: the HEF was compiled for Hailo-8L; on a Hailo-8 it runs at lower performance");

    model_.assign(model.begin(), model.end());
    group_name_ = group.name;
    quantizes_ = quantizes;
    dequantizes_ = dequantizes;
    inputs_ = std::move(inputs);
    outputs_ = std::move(outputs);
    loaded_ = true;
    return info;
  }

  // A sibling only validates its HEF and sizes its host tensors at load: it touches the device first at its first
  // invoke, after the interpreter has destroyed this backend (and with it the configured network group and the
  // device's in-use mark: one process, one VDevice per device). So the old model serves until the new HEF is known
  // good, and the device holds one network group at a time. The loaded libhailort is shared, not reopened.
  std::unique_ptr<InferenceBackend> make_sibling() const override {
    auto sibling = std::make_unique<Hailo8Backend>(options_);
    sibling->library_ = library_;
    return sibling;
  }

  void unload() override {
    network_.reset();  // releases vstreams, HEF and device before the library may go
    loaded_ = false;
    model_.clear();
    inputs_.clear();
    outputs_.clear();
  }

  std::span<uint8_t> input(size_t index) override {
    if (!loaded_ || index >= inputs_.size()) return {};
    return inputs_[index].user();
  }
  std::span<const uint8_t> output(size_t index) const override {
    if (!loaded_ || index >= outputs_.size()) return {};
    return outputs_[index].user();
  }

  Result<std::vector<engine::LayerTime>> invoke(const InvokeContext& ctx) override {
    if (!loaded_) return make_error(Errc::no_model, "no HEF loaded");
    if (ctx.cancelled()) return make_error(Errc::cancelled, "inference cancelled before it started");
    for (auto& o : outputs_) o.clear();  // nothing stale survives a failure
    auto times = run(ctx.log);
    if (!times) {
      for (auto& o : outputs_) o.clear();
      log_line(ctx.log, "hailo8: " + times.error().message);
    }
    return times;
  }

 private:
  Result<std::vector<engine::LayerTime>> run(const engine::LogFn& log) {
    if (!network_) AISRV_TRY(configure_network(log));
    std::vector<engine::LayerTime> times;
    using clock = std::chrono::steady_clock;
    if (quantizes_) {
      const auto t0 = clock::now();
      for (auto& t : inputs_) AISRV_TRY(t.to_frame());
      times.push_back({group_name_ + ":quantize", "HOST_QUANTIZE", elapsed_ns(t0)});
    }
    std::vector<std::span<const uint8_t>> in;
    for (const auto& t : inputs_) in.emplace_back(t.frame());
    std::vector<std::span<uint8_t>> out;
    for (auto& t : outputs_) out.emplace_back(t.frame());
    runtime::RunTimes rt;
    if (auto s = network_->run(in, out, &rt); !s) {
      network_.reset();  // reconfigure on the next invoke
      return std::move(s).error();
    }
    times.push_back({group_name_ + ":write", "HAILORT_VSTREAM_WRITE", rt.write_ns});
    times.push_back({group_name_ + ":read", "HAILORT_VSTREAM_READ", rt.read_ns});
    if (dequantizes_) {
      const auto t0 = clock::now();
      for (auto& t : outputs_) AISRV_TRY(t.from_frame());
      times.push_back({group_name_ + ":dequantize", "HOST_DEQUANTIZE", elapsed_ns(t0)});
    }
    return times;
  }

  // Device (driver layer) -> libhailort -> configured network group, each failure named.
  Status configure_network(const engine::LogFn& log) {
    const CheckedDevice device = AISRV_TRY(check_device(*options_.driver_opener, options_.discovery, options_.device));
    for (const auto& note : device.notes) log_line(log, "hailo8: " + note);
    if (!library_) {
      auto lib = runtime::HailortLibrary::open_configured(options_.hailort);
      if (!lib) return Error{Errc::infer_error, lib.error().message};
      library_ = std::move(*lib);
      const char* logs = std::getenv("HAILORT_LOGGER_PATH");
      log_line(log, fmt::format("hailo8: loaded libhailort {}.{}.{} ({}); its log: {}/hailort.log",
                                library_->version().major, library_->version().minor, library_->version().revision,
                                library_->path(), logs ? logs : "."));
    }
    std::vector<runtime::TensorSpec> in_specs, out_specs;
    for (const auto& t : inputs_) in_specs.push_back(t.spec());
    for (const auto& t : outputs_) out_specs.push_back(t.spec());
    runtime::NetworkOptions so;
    so.device_id = device.board_location;
    so.hef_hint = hef_hint_;
    so.vstream_timeout_ms = options_.timeout_ms;
    auto network = runtime::ConfiguredNetwork::open(*library_, model_, in_specs, out_specs, so);
    if (!network) return std::move(network).error();
    network_ = std::move(*network);
    log_line(log, fmt::format("hailo8: configured '{}' on {} (driver {}{})", group_name_, device.path,
                              device.driver.str(),
                              device.board_location ? ", PCI " + *device.board_location : std::string()));
    return ok();
  }

  Hailo8Options options_;
  bool loaded_ = false;
  std::vector<uint8_t> model_;
  std::string group_name_;
  std::string hef_hint_;
  bool quantizes_ = false, dequantizes_ = false;
  std::vector<HostTensor> inputs_, outputs_;
  std::shared_ptr<runtime::HailortLibrary> library_;  // before network_: destroyed after it; shared by siblings
  std::unique_ptr<runtime::ConfiguredNetwork> network_;
};

}  // namespace

Result<Hailo8Options> hailo8_options(const engine::EngineSpec& spec) {
  Hailo8Options o;
  for (const auto& [key, value] : spec.options) {
    if (key == "device") {
      o.device = value;
    } else if (key == "hailort") {
      o.hailort = value;
    } else if (key == "float") {
      auto f = parse_float_io(value);
      if (!f) return make_error(Errc::invalid_argument, "engine spec '{}': {}", spec.text, f.error().message);
      o.float_io = *f;
    } else if (key == "log-dir") {
      if (value.empty() || value[0] != '/')
        return make_error(Errc::invalid_argument, "engine spec '{}': log-dir needs an absolute path", spec.text);
      o.log_dir = value;
    } else if (key == "timeout") {
      char* end = nullptr;
      const unsigned long ms = std::strtoul(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || ms == 0 || ms > 3'600'000)
        return make_error(Errc::invalid_argument, "engine spec '{}': timeout={} is not 1..3600000 milliseconds",
                          spec.text, value);
      o.timeout_ms = static_cast<uint32_t>(ms);
    } else {
      return make_error(Errc::invalid_argument,
                        "engine spec '{}': hailo8 has no option '{}' (it takes device=, hailort=, float=, timeout=, log-dir=)",
                        spec.text, key);
    }
  }
  return o;
}

std::unique_ptr<engine::InferenceBackend> make_hailo8_backend(Hailo8Options options) {
  return std::make_unique<Hailo8Backend>(std::move(options));
}

std::string prepare_hailort_log_dir(const Hailo8Options& options) {
  return runtime::prepare_hailort_log_dir(options.log_dir);
}

void register_hailo8_backend(engine::BackendRegistry& registry) {
  registry.add("hailo8",
               "Hailo-8 NPU running HEF models through libhailort (device=/dev/hailoN, hailort=PATH to the library, "
               "float=in|out|both: float32 tensors converted by the engine, timeout=MS for the device's answers, "
               "default 10000)",
               [](const engine::EngineSpec& spec) -> Result<std::unique_ptr<engine::InferenceBackend>> {
                 auto o = hailo8_options(spec);
                 if (!o) return std::move(o).error();
                 prepare_hailort_log_dir(*o);
                 return make_hailo8_backend(std::move(*o));
               });
}

}  // namespace aisrv::engine::hailo8
