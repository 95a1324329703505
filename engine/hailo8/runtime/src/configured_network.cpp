// aisrv hailo8/runtime — a configured network group: VDevice, HEF, configure, vstreams, write/read, release in reverse
// order.
#include "aisrv/engine/hailo8/runtime/configured_network.hpp"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace aisrv::engine::hailo8::runtime {

using namespace hailort_abi;

std::string_view status_meaning(hailo_status status) {
  switch (status) {
    case HAILO_OUT_OF_PHYSICAL_DEVICES:
      return "no free Hailo device: none was found, or every one is in use by another process";
    case HAILO_DEVICE_IN_USE: return "the Hailo-8 is in use by another process";
    case HAILO_INVALID_DRIVER_VERSION:
      return "driver version unsupported: the hailo_pci driver's version differs from libhailort's (HailoRT requires "
             "an exact match)";
    case HAILO_DRIVER_INVALID_IOCTL:
      return "driver version unsupported: the hailo_pci driver does not know libhailort's ioctls";
    case HAILO_DRIVER_NOT_INSTALLED: return "the hailo_pci driver is not installed";
    case HAILO_DRIVER_OPERATION_FAILED: return "opening or driving the device node failed (permissions?)";
    case HAILO_UNSUPPORTED_FW_VERSION: return "the Hailo-8 firmware version is not the one libhailort expects";
    case HAILO_HEF_NOT_SUPPORTED: return "libhailort does not support this HEF";
    case HAILO_HEF_FILE_CORRUPTED: return "libhailort finds the HEF corrupted";
    case HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE: return "the HEF was compiled for another architecture than the device's";
    case HAILO_INVALID_HEF: return "libhailort finds the HEF invalid";
    case HAILO_TIMEOUT: return "the device did not answer in time";
    default: return {};
  }
}

Error ConfiguredNetwork::fail(std::string_view call, hailo_status status, std::string_view hint) const {
  std::string msg = fmt::format("{} failed with {}", call, lib_.status_name(status));
  if (auto m = status_meaning(status); !m.empty()) msg += fmt::format(": {}", m);
  if (!hint.empty()) msg += fmt::format(" ({})", hint);
  return Error{Errc::infer_error, std::move(msg)};
}

Result<std::unique_ptr<ConfiguredNetwork>> ConfiguredNetwork::open(const HailortLibrary& lib,
                                                                   std::span<const uint8_t> hef_file,
                                                                   const std::vector<TensorSpec>& inputs,
                                                                   const std::vector<TensorSpec>& outputs,
                                                                   const NetworkOptions& options) {
  const HailortApi& a = lib.api();
  std::unique_ptr<ConfiguredNetwork> s(new ConfiguredNetwork(lib));
  s->inputs_ = inputs;
  s->outputs_ = outputs;

  hailo_vdevice_params_t params{};
  hailo_status st = a.init_vdevice_params(&params);
  if (st != HAILO_SUCCESS) return s->fail("hailo_init_vdevice_params", st);
  hailo_device_id_t id{};
  if (options.device_id) {
    if (options.device_id->size() >= sizeof id.id)
      return make_error(Errc::infer_error, "device id '{}' is too long for HailoRT", *options.device_id);
    std::memcpy(id.id, options.device_id->c_str(), options.device_id->size() + 1);
    params.device_count = 1;
    params.device_ids = &id;
  }
  st = a.create_vdevice(&params, &s->vdevice_);
  if (st != HAILO_SUCCESS) {
    // Our driver check accepted the device; if HailoRT cannot use it, say which id was asked for and which devices
    // HailoRT itself sees (hailo_create_vdevice answers a bare HAILO_INVALID_ARGUMENT for an id it does not see).
    if (!options.device_id || st != HAILO_INVALID_ARGUMENT) return s->fail("hailo_create_vdevice", st);
    std::string seen;
    hailo_device_id_t ids[16] = {};
    size_t count = 16;
    const hailo_status scan = a.scan_devices(nullptr, ids, &count);
    if (scan != HAILO_SUCCESS) {
      seen = fmt::format("hailo_scan_devices failed with {}", lib.status_name(scan));
    } else if (count == 0) {
      seen = "HailoRT sees no device";
    } else {
      for (size_t i = 0; i < count && i < 16; ++i)
        seen += (i ? ", " : "") + std::string(ids[i].id, strnlen(ids[i].id, sizeof ids[i].id));
      seen = "HailoRT sees " + seen;
    }
    return s->fail("hailo_create_vdevice", st, fmt::format("asked for device {}; {}", *options.device_id, seen));
  }

  st = a.create_hef_buffer(&s->hef_, hef_file.data(), hef_file.size());
  if (st != HAILO_SUCCESS) return s->fail("hailo_create_hef_buffer", st, options.hef_hint);

  auto configure = std::make_unique<hailo_configure_params_t>();
  std::memset(configure.get(), 0, sizeof *configure);
  st = a.init_configure_params_by_vdevice(s->hef_, s->vdevice_, configure.get());
  if (st != HAILO_SUCCESS) return s->fail("hailo_init_configure_params_by_vdevice", st);
  hailo_configured_network_group groups[HAILO_MAX_NETWORK_GROUPS] = {};
  size_t group_count = HAILO_MAX_NETWORK_GROUPS;
  st = a.configure_vdevice(s->vdevice_, s->hef_, configure.get(), groups, &group_count);
  if (st != HAILO_SUCCESS) return s->fail("hailo_configure_vdevice", st);
  if (group_count != 1)
    return make_error(Errc::infer_error, "hailo_configure_vdevice configured {} network groups, 1 expected",
                      group_count);
  s->group_ = groups[0];

  // Vstream parameters with user type AUTO (device type, FLOAT32 for NMS) for every input and output.
  std::vector<hailo_input_vstream_params_by_name_t> in_params(HAILO_MAX_STREAMS_COUNT);
  size_t in_count = in_params.size();
  st = a.make_input_vstream_params(s->group_, false, HAILO_FORMAT_TYPE_AUTO, in_params.data(), &in_count);
  if (st != HAILO_SUCCESS) return s->fail("hailo_make_input_vstream_params", st);
  std::vector<hailo_output_vstream_params_by_name_t> out_params(HAILO_MAX_STREAMS_COUNT);
  size_t out_count = out_params.size();
  st = a.make_output_vstream_params(s->group_, false, HAILO_FORMAT_TYPE_AUTO, out_params.data(), &out_count);
  if (st != HAILO_SUCCESS) return s->fail("hailo_make_output_vstream_params", st);
  if (in_count > in_params.size() || out_count > out_params.size())
    return make_error(Errc::infer_error,
                      "libhailort reports {} input and {} output vstream parameters, more than the {} it was given "
                      "room for",
                      in_count, out_count, HAILO_MAX_STREAMS_COUNT);
  if (in_count != inputs.size() || out_count != outputs.size())
    return make_error(Errc::infer_error,
                      "libhailort lists {} input and {} output vstreams, the HEF reader found {} and {}", in_count,
                      out_count, inputs.size(), outputs.size());

  if (options.vstream_timeout_ms != 0) {
    for (size_t i = 0; i < in_count; ++i) in_params[i].params.timeout_ms = options.vstream_timeout_ms;
    for (size_t i = 0; i < out_count; ++i) out_params[i].params.timeout_ms = options.vstream_timeout_ms;
  }
  s->input_handles_.assign(in_count, nullptr);
  st = a.create_input_vstreams(s->group_, in_params.data(), in_count, s->input_handles_.data());
  if (st != HAILO_SUCCESS) {
    s->input_handles_.clear();
    return s->fail("hailo_create_input_vstreams", st);
  }
  s->output_handles_.assign(out_count, nullptr);
  st = a.create_output_vstreams(s->group_, out_params.data(), out_count, s->output_handles_.data());
  if (st != HAILO_SUCCESS) {
    s->output_handles_.clear();
    return s->fail("hailo_create_output_vstreams", st);
  }

  // Map each handle to our tensor by name and check the frame size against the HEF reader's.
  auto map = [&](auto& handles, const std::vector<TensorSpec>& specs, std::vector<size_t>& slots, auto info_fn,
                 auto size_fn, const char* what) -> Status {
    slots.assign(specs.size(), SIZE_MAX);
    for (size_t h = 0; h < handles.size(); ++h) {
      hailo_vstream_info_t info{};
      hailo_status rc = info_fn(handles[h], &info);
      if (rc != HAILO_SUCCESS) return s->fail(what[0] == 'i' ? "hailo_get_input_vstream_info"
                                                             : "hailo_get_output_vstream_info", rc);
      size_t frame = 0;
      rc = size_fn(handles[h], &frame);
      if (rc != HAILO_SUCCESS) return s->fail(what[0] == 'i' ? "hailo_get_input_vstream_frame_size"
                                                             : "hailo_get_output_vstream_frame_size", rc);
      const std::string name(info.name, strnlen(info.name, sizeof info.name));
      size_t k = 0;
      while (k < specs.size() && specs[k].name != name) ++k;
      if (k == specs.size())
        return make_error(Errc::infer_error, "libhailort has {} vstream '{}', which the HEF reader does not list",
                          what, name);
      if (slots[k] != SIZE_MAX)
        return make_error(Errc::infer_error, "libhailort lists {} vstream '{}' twice", what, name);
      if (frame != specs[k].frame_size || info.format.type != specs[k].format_type)
        return make_error(Errc::infer_error,
                          "{} vstream '{}': libhailort expects {} bytes of format type {}, the HEF reader computed {} "
                          "bytes of type {}",
                          what, name, frame, info.format.type, specs[k].frame_size, specs[k].format_type);
      slots[k] = h;
    }
    return ok();
  };
  if (auto r = map(s->input_handles_, inputs, s->input_slot_, a.get_input_vstream_info,
                   a.get_input_vstream_frame_size, "input");
      !r)
    return std::move(r).error();
  if (auto r = map(s->output_handles_, outputs, s->output_slot_, a.get_output_vstream_info,
                   a.get_output_vstream_frame_size, "output");
      !r)
    return std::move(r).error();
  return s;
}

ConfiguredNetwork::~ConfiguredNetwork() {
  const HailortApi& a = lib_.api();
  // Release order of the HailoRT examples: output vstreams, input vstreams, HEF, then the device (which also owns
  // the configured network group).
  if (!output_handles_.empty()) a.release_output_vstreams(output_handles_.data(), output_handles_.size());
  if (!input_handles_.empty()) a.release_input_vstreams(input_handles_.data(), input_handles_.size());
  if (hef_) a.release_hef(hef_);
  if (vdevice_) a.release_vdevice(vdevice_);
}

Status ConfiguredNetwork::run(std::span<const std::span<const uint8_t>> inputs,
                              std::span<const std::span<uint8_t>> outputs,
                              RunTimes* times) {
  const HailortApi& a = lib_.api();
  if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size())
    return make_error(Errc::infer_error, "run with {} inputs and {} outputs, the network has {} and {}",
                      inputs.size(), outputs.size(), inputs_.size(), outputs_.size());
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size() != inputs_[i].frame_size)
      return make_error(Errc::infer_error, "input '{}' has {} bytes, the frame is {}", inputs_[i].name,
                        inputs[i].size(), inputs_[i].frame_size);
    const hailo_status st = a.vstream_write_raw_buffer(input_handles_[input_slot_[i]], inputs[i].data(),
                                                       inputs[i].size());
    if (st != HAILO_SUCCESS) return fail(fmt::format("hailo_vstream_write_raw_buffer('{}')", inputs_[i].name), st);
  }
  const auto t1 = clock::now();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].size() != outputs_[i].frame_size)
      return make_error(Errc::infer_error, "output '{}' buffer has {} bytes, the frame is {}", outputs_[i].name,
                        outputs[i].size(), outputs_[i].frame_size);
    const hailo_status st = a.vstream_read_raw_buffer(output_handles_[output_slot_[i]], outputs[i].data(),
                                                      outputs[i].size());
    if (st != HAILO_SUCCESS) return fail(fmt::format("hailo_vstream_read_raw_buffer('{}')", outputs_[i].name), st);
  }
  const auto t2 = clock::now();
  if (times) {
    times->write_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    times->read_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count());
  }
  return ok();
}

}  // namespace aisrv::engine::hailo8::runtime
