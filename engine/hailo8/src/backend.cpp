// aisrv hailo8 — the "hailo8" backend: HEF validation and tensor sizing at load, inference through libhailort at
// invoke (device check -> library -> session configured once per model -> write inputs -> read outputs).
#include "aisrv/engine/hailo8/backend.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "aisrv/engine/hailo8/runtime/device_nodes.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"
#include "aisrv/engine/hailo8/runtime/session.hpp"

namespace aisrv::engine::hailo8 {
namespace {

using engine::InferenceBackend;
using engine::InvokeContext;
using engine::LoadOptions;
using engine::ModelInfo;
using engine::TensorDesc;

void log_line(const engine::LogFn& log, const std::string& line) {
  if (log) log(line);
}

protocol::DType dtype_of(hef::FormatType t) {
  switch (t) {
    case hef::FormatType::uint8: return protocol::DType::uint8;
    case hef::FormatType::uint16: return protocol::DType::uint16;
    case hef::FormatType::float32: return protocol::DType::float32;
    default: return protocol::DType::unknown;
  }
}

int32_t to_i32(uint32_t v) { return static_cast<int32_t>(std::min<uint32_t>(v, std::numeric_limits<int32_t>::max())); }

// Host tensor of one vstream: NC -> [1, C]; NHW -> [1, H, W]; NMS by class -> [1, C*(1+5*M)] float32 values;
// everything else -> [1, H, W, F].
Result<TensorDesc> describe_tensor(const hef::VStreamInfo& v) {
  TensorDesc t;
  t.name = v.name;
  t.dtype = dtype_of(v.type);
  const uint64_t bytes = v.frame_size();
  if (bytes == 0 || bytes > std::numeric_limits<uint32_t>::max())
    return make_error(Errc::model_error, "vstream '{}' has a frame of {} bytes", v.name, bytes);
  t.bytes = static_cast<uint32_t>(bytes);
  if (v.nms) {
    t.shape = {1, to_i32(static_cast<uint32_t>(bytes / 4))};
    return t;  // float32 boxes, not quantized
  }
  switch (v.order) {
    case hef::FormatOrder::nc: t.shape = {1, to_i32(v.shape.features)}; break;
    case hef::FormatOrder::nhw: t.shape = {1, to_i32(v.shape.height), to_i32(v.shape.width)}; break;
    default: t.shape = {1, to_i32(v.shape.height), to_i32(v.shape.width), to_i32(v.shape.features)}; break;
  }
  if (v.type == hef::FormatType::float32) return t;
  auto zp = [](float z) { return static_cast<int32_t>(std::lround(z)); };
  if (v.quant_is_per_feature) {
    t.quant_axis = static_cast<int32_t>(t.shape.size()) - 1;
    for (const auto& q : v.quant_per_feature) {
      t.scale.push_back(q.scale);
      t.zero_point.push_back(zp(q.zero_point));
    }
  } else if (v.quant.scale != 0) {
    t.scale = {v.quant.scale};
    t.zero_point = {zp(v.quant.zero_point)};
  }
  return t;
}

class Hailo8Backend final : public InferenceBackend {
 public:
  explicit Hailo8Backend(Hailo8Options options) : options_(std::move(options)) {}
  ~Hailo8Backend() override { unload(); }

  std::string_view kind() const override { return "hailo8"; }

  std::string options() const override {
    return fmt::format("device={},hailort={}", options_.device.empty() ? "auto" : options_.device,
                       options_.hailort.empty() ? "auto" : options_.hailort);
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

    ModelInfo info;
    info.format = "hef";
    info.layer_count = 2;  // timings: write, read
    std::vector<runtime::TensorSpec> in_specs, out_specs;
    for (const auto& v : *ins) {
      info.inputs.push_back(AISRV_TRY(describe_tensor(v)));
      in_specs.push_back({v.name, static_cast<uint32_t>(v.type), v.frame_size()});
    }
    for (const auto& v : *outs) {
      info.outputs.push_back(AISRV_TRY(describe_tensor(v)));
      out_specs.push_back({v.name, static_cast<uint32_t>(v.type), v.frame_size()});
    }

    const auto& log = load_options.log;
    log_line(log, fmt::format("hailo8: HEF v{} for {} (SDK {}), network group '{}', {} context(s), {} input(s), {} "
                              "output(s)",
                              hef->container.version, hef::hw_arch_name(hef->hw_arch), hef->sdk_version, group.name,
                              group.context_count, info.inputs.size(), info.outputs.size()));
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
    in_specs_ = std::move(in_specs);
    out_specs_ = std::move(out_specs);
    inputs_.clear();
    outputs_.clear();
    for (const auto& t : info.inputs) inputs_.emplace_back(t.bytes, 0);
    for (const auto& t : info.outputs) outputs_.emplace_back(t.bytes, 0);
    loaded_ = true;
    return info;
  }

  void unload() override {
    session_.reset();  // releases vstreams, HEF and device before the library may go
    loaded_ = false;
    model_.clear();
    inputs_.clear();
    outputs_.clear();
    in_specs_.clear();
    out_specs_.clear();
  }

  std::span<uint8_t> input(size_t index) override {
    if (!loaded_ || index >= inputs_.size()) return {};
    return inputs_[index];
  }
  std::span<const uint8_t> output(size_t index) const override {
    if (!loaded_ || index >= outputs_.size()) return {};
    return outputs_[index];
  }

  Result<std::vector<engine::LayerTime>> invoke(const InvokeContext& ctx) override {
    if (!loaded_) return make_error(Errc::no_model, "no HEF loaded");
    if (ctx.cancelled()) return make_error(Errc::cancelled, "inference cancelled before it started");
    for (auto& o : outputs_) std::fill(o.begin(), o.end(), uint8_t{0});  // nothing stale survives a failure
    if (!session_) {
      if (auto s = start_session(ctx.log); !s) {
        log_line(ctx.log, "hailo8: " + s.error().message);
        return std::move(s).error();
      }
    }
    std::vector<std::span<const uint8_t>> in;
    for (const auto& b : inputs_) in.emplace_back(b);
    std::vector<std::span<uint8_t>> out;
    for (auto& b : outputs_) out.emplace_back(b);
    runtime::RunTimes times;
    if (auto s = session_->run(in, out, &times); !s) {
      session_.reset();  // reconfigure on the next invoke
      for (auto& o : outputs_) std::fill(o.begin(), o.end(), uint8_t{0});
      log_line(ctx.log, "hailo8: " + s.error().message);
      return std::move(s).error();
    }
    return std::vector<engine::LayerTime>{{group_name_ + ":write", "HAILORT_VSTREAM_WRITE", times.write_ns},
                                          {group_name_ + ":read", "HAILORT_VSTREAM_READ", times.read_ns}};
  }

 private:
  // Device node -> libhailort -> configured session, each failure named.
  Status start_session(const engine::LogFn& log) {
    const runtime::DeviceRoots roots{options_.dev_root, options_.sysfs_class};
    std::optional<std::string> device_id;
    std::string node;
    if (!options_.device.empty()) {
      std::error_code ec;
      if (!std::filesystem::exists(options_.device, ec))
        return make_error(Errc::infer_error, "no Hailo-8 at {}: no such device node", options_.device);
      node = options_.device;
    } else {
      const auto nodes = runtime::find_device_nodes(roots);
      if (nodes.empty())
        return make_error(Errc::infer_error,
                          "no Hailo-8 device: no {}/hailo* device node (is the hailo_pci driver loaded?)",
                          options_.dev_root.string());
      node = nodes.front().string();
    }
    if (!library_) {
      const auto candidates =
          options_.hailort.empty() ? runtime::HailortLibrary::default_candidates() : std::vector{options_.hailort};
      auto lib = runtime::HailortLibrary::open(candidates);
      if (!lib) return Error{Errc::infer_error, lib.error().message};
      library_ = std::move(*lib);
      log_line(log, fmt::format("hailo8: loaded libhailort {}.{}.{} ({})", library_->version().major,
                                library_->version().minor, library_->version().revision, library_->path()));
    }
    if (!options_.device.empty()) {
      auto id = runtime::board_location(roots, options_.device);
      if (!id) return Error{Errc::infer_error, id.error().message};
      device_id = *id;
    }
    runtime::SessionOptions so;
    so.device_id = device_id;
    so.hef_hint = hef_hint_;
    auto session = runtime::Session::open(*library_, model_, in_specs_, out_specs_, so);
    if (!session) return std::move(session).error();
    session_ = std::move(*session);
    log_line(log, fmt::format("hailo8: configured '{}' on {}{}", group_name_, node,
                              device_id ? fmt::format(" ({})", *device_id) : std::string()));
    return ok();
  }

  Hailo8Options options_;
  bool loaded_ = false;
  std::vector<uint8_t> model_;
  std::string group_name_;
  std::string hef_hint_;
  std::vector<runtime::TensorSpec> in_specs_, out_specs_;
  std::vector<std::vector<uint8_t>> inputs_, outputs_;
  std::unique_ptr<runtime::HailortLibrary> library_;  // declared before session_: destroyed after it
  std::unique_ptr<runtime::Session> session_;
};

}  // namespace

Result<Hailo8Options> hailo8_options(const engine::EngineSpec& spec) {
  Hailo8Options o;
  for (const auto& [key, value] : spec.options) {
    if (key == "device") o.device = value;
    else if (key == "hailort") o.hailort = value;
    else
      return make_error(Errc::invalid_argument, "engine spec '{}': hailo8 has no option '{}' (it takes device=, hailort=)",
                        spec.text, key);
  }
  return o;
}

std::unique_ptr<engine::InferenceBackend> make_hailo8_backend(Hailo8Options options) {
  return std::make_unique<Hailo8Backend>(std::move(options));
}

void register_hailo8_backend(engine::BackendRegistry& registry) {
  registry.add("hailo8",
               "Hailo-8 NPU running HEF models through libhailort (device=/dev/hailoN, hailort=PATH to the library)",
               [](const engine::EngineSpec& spec) -> Result<std::unique_ptr<engine::InferenceBackend>> {
                 auto o = hailo8_options(spec);
                 if (!o) return std::move(o).error();
                 return make_hailo8_backend(std::move(*o));
               });
}

}  // namespace aisrv::engine::hailo8
