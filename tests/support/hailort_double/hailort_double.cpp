// aisrv tests — a test double of libhailort: the C functions the hailo8 engine calls, with HailoRT 4.23's
// signatures and struct layouts in its own declarations (hailort_c_api.h, transcribed from the facts — never the
// product's hailort_abi.hpp), checking their arguments the way the real library does (NULL pointers, capacities,
// frame sizes, handle validity, scheduler semantics), recording every call and returning scripted data. Where the
// real library waits, the double waits: a read with no frame blocks up to the vstream's timeout (default 10 000 ms)
// before HAILO_TIMEOUT. Built as a shared library so the backend loads it with dlopen exactly like the real one.
// Test-only; never shipped.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hailort_c_api.h"
#include "hailort_double_control.h"

namespace {

struct VStream {
  std::string name;
  int direction = 0;
  uint32_t type = 1, order = 1;
  uint32_t h = 0, w = 0, f = 0;
  size_t frame = 0;
};

struct State {
  std::mutex mu;
  std::condition_variable frames;  // a write may let a waiting read go on
  hailo_version_t version{4, 23, 0};
  std::vector<VStream> vstreams;
  std::map<std::string, std::vector<uint8_t>> outputs;
  std::map<std::string, std::vector<uint8_t>> written;
  std::map<std::string, uint64_t> writes, reads;  // frames per vstream
  std::map<std::string, int32_t> failures;
  std::string log;
  std::string log_copy;
  std::vector<uint8_t> hef;
  std::set<void*> vdevices, hefs, groups, vstream_handles;
  std::map<void*, size_t> handle_vstream;  // handle -> index into vstreams
  std::map<void*, uint32_t> handle_timeout;  // handle -> the vstream's timeout_ms from its params
  std::vector<std::string> devices;          // what hailo_scan_devices finds
  int next = 1;
};

State& state() {
  static State s;  // the double's own global state stands in for the library's
  return s;
}

void* new_handle(State& s) { return reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + s.next++ * 16)); }

void record(State& s, const std::string& line) {
  if (!s.log.empty()) s.log += '\n';
  s.log += line;
}

// Scripted failure for `fn`, else HAILO_SUCCESS.
hailo_status scripted(State& s, const char* fn) {
  auto it = s.failures.find(fn);
  return it == s.failures.end() ? HAILO_SUCCESS : static_cast<hailo_status>(it->second);
}

std::vector<size_t> sorted_by_name(const State& s, int direction) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < s.vstreams.size(); ++i)
    if (s.vstreams[i].direction == direction) idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return s.vstreams[a].name < s.vstreams[b].name; });
  return idx;
}

template <typename Params>
hailo_status make_params(State& s, const char* fn, hailo_configured_network_group g, hailo_format_type_t type,
                         Params* params, size_t* count, int direction) {
  if (!params || !count) return HAILO_INVALID_ARGUMENT;
  record(s, std::string(fn) + " format_type=" + std::to_string(type) + " capacity=" + std::to_string(*count));
  if (!s.groups.count(g)) return HAILO_INVALID_ARGUMENT;
  if (auto st = scripted(s, fn)) return st;
  const auto idx = sorted_by_name(s, direction);
  if (*count < idx.size()) {
    *count = idx.size();
    return HAILO_INSUFFICIENT_BUFFER;
  }
  for (size_t i = 0; i < idx.size(); ++i) {
    std::memset(&params[i], 0, sizeof params[i]);
    std::snprintf(params[i].name, sizeof params[i].name, "%s", s.vstreams[idx[i]].name.c_str());
    params[i].params.user_buffer_format.type = type;
    params[i].params.timeout_ms = HAILO_DEFAULT_VSTREAM_TIMEOUT_MS;
    params[i].params.queue_size = HAILO_DEFAULT_VSTREAM_QUEUE_SIZE;
  }
  *count = idx.size();
  return HAILO_SUCCESS;
}

template <typename Params, typename Handle>
hailo_status create_vstreams(State& s, const char* fn, hailo_configured_network_group g, const Params* params,
                             size_t count, Handle* out, int direction) {
  if (!params || !out) return HAILO_INVALID_ARGUMENT;
  std::string line = std::string(fn) + " count=" + std::to_string(count);
  for (size_t i = 0; i < count; ++i) line += std::string(" ") + params[i].name + ":" +
                                            std::to_string(params[i].params.user_buffer_format.type);
  record(s, line);
  if (!s.groups.count(g)) return HAILO_INVALID_ARGUMENT;
  if (auto st = scripted(s, fn)) return st;
  // Like HailoRT: handles come out in name order whatever the order of the params.
  std::vector<std::pair<size_t, uint32_t>> chosen;  // vstream, timeout
  for (size_t i = 0; i < count; ++i) {
    size_t k = 0;
    while (k < s.vstreams.size() && !(s.vstreams[k].direction == direction && s.vstreams[k].name == params[i].name))
      ++k;
    if (k == s.vstreams.size()) return HAILO_NOT_FOUND;
    chosen.emplace_back(k, params[i].params.timeout_ms);
  }
  std::sort(chosen.begin(), chosen.end(),
            [&](const auto& a, const auto& b) { return s.vstreams[a.first].name < s.vstreams[b.first].name; });
  for (size_t i = 0; i < chosen.size(); ++i) {
    void* h = new_handle(s);
    s.vstream_handles.insert(h);
    s.handle_vstream[h] = chosen[i].first;
    s.handle_timeout[h] = chosen[i].second;
    out[i] = static_cast<Handle>(h);
  }
  return HAILO_SUCCESS;
}

const VStream* vstream_of(State& s, void* h, int direction) {
  if (!s.vstream_handles.count(h)) return nullptr;
  const VStream& v = s.vstreams[s.handle_vstream[h]];
  return v.direction == direction ? &v : nullptr;
}

hailo_status vstream_info(State& s, void* h, hailo_vstream_info_t* info, int direction, const char* fn) {
  if (!info) return HAILO_INVALID_ARGUMENT;
  const VStream* v = vstream_of(s, h, direction);
  record(s, std::string(fn) + " " + (v ? v->name : "?"));
  if (!v) return HAILO_INVALID_ARGUMENT;
  std::memset(info, 0, sizeof *info);
  std::snprintf(info->name, sizeof info->name, "%s", v->name.c_str());
  info->direction = static_cast<hailo_stream_direction_t>(direction);
  info->format.type = static_cast<hailo_format_type_t>(v->type);
  info->format.order = static_cast<hailo_format_order_t>(v->order);
  info->shape = hailo_3d_image_shape_t{v->h, v->w, v->f};
  return HAILO_SUCCESS;
}

hailo_status frame_size(State& s, void* h, size_t* size, int direction) {
  if (!size) return HAILO_INVALID_ARGUMENT;
  const VStream* v = vstream_of(s, h, direction);
  if (!v) return HAILO_INVALID_ARGUMENT;
  *size = v->frame;
  return HAILO_SUCCESS;
}

template <typename Handle>
hailo_status release_vstreams(State& s, const char* fn, const Handle* handles, size_t count) {
  if (!handles) return HAILO_INVALID_ARGUMENT;
  record(s, std::string(fn) + " count=" + std::to_string(count));
  for (size_t i = 0; i < count; ++i) {
    void* h = handles[i];
    if (!s.vstream_handles.erase(h)) return HAILO_INVALID_ARGUMENT;
    s.handle_vstream.erase(h);
    s.handle_timeout.erase(h);
  }
  return HAILO_SUCCESS;
}

}  // namespace

extern "C" {

// ---- control interface -------------------------------------------------------------------------------------------
void aisrv_hailort_double_reset(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.version = {4, 23, 0};
  s.vstreams.clear();
  s.outputs.clear();
  s.written.clear();
  s.writes.clear();
  s.reads.clear();
  s.failures.clear();
  s.log.clear();
  s.hef.clear();
  s.vdevices.clear();
  s.hefs.clear();
  s.groups.clear();
  s.vstream_handles.clear();
  s.handle_vstream.clear();
  s.handle_timeout.clear();
  s.devices.clear();
}

void aisrv_hailort_double_set_devices(const char* ids) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.devices.clear();
  std::string all = ids ? ids : "";
  for (size_t at = 0; at < all.size();) {
    const size_t comma = all.find(',', at);
    s.devices.push_back(all.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
}

void aisrv_hailort_double_set_version(uint32_t major, uint32_t minor, uint32_t revision) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.version = {major, minor, revision};
}

void aisrv_hailort_double_add_vstream(const char* name, int direction, uint32_t format_type, uint32_t format_order,
                                      uint32_t height, uint32_t width, uint32_t features, size_t frame) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.vstreams.push_back(VStream{name, direction, format_type, format_order, height, width, features, frame});
}

void aisrv_hailort_double_set_output(const char* name, const void* data, size_t size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const auto* p = static_cast<const uint8_t*>(data);
  s.outputs[name].assign(p, p + size);
  s.frames.notify_all();
}

void aisrv_hailort_double_fail(const char* function, int32_t status) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (status == 0) s.failures.erase(function);
  else s.failures[function] = status;
}

const char* aisrv_hailort_double_log(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.log_copy = s.log;
  return s.log_copy.c_str();
}

size_t aisrv_hailort_double_written(const char* name, void* out, size_t capacity) {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.written.find(name);
  if (it == s.written.end()) return 0;
  std::memcpy(out, it->second.data(), std::min(capacity, it->second.size()));
  return it->second.size();
}

size_t aisrv_hailort_double_hef(void* out, size_t capacity) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (out) std::memcpy(out, s.hef.data(), std::min(capacity, s.hef.size()));
  return s.hef.size();
}

int aisrv_hailort_double_live_handles(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return static_cast<int>(s.vdevices.size() + s.hefs.size() + s.vstream_handles.size());
}

// ---- the HailoRT C API subset -------------------------------------------------------------------------------------
hailo_status hailo_get_library_version(hailo_version_t* version) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!version) return HAILO_INVALID_ARGUMENT;
  record(s, "hailo_get_library_version");
  *version = s.version;
  return HAILO_SUCCESS;
}

const char* hailo_get_status_message(hailo_status status) {
  // As hailort.cpp's hailo_get_status_message: the enum identifier for every code of the table, NULL (after
  // logging an error) for a code at or above HAILO_STATUS_COUNT.
  switch (status) {
#define HAILORT_DOUBLE_NAME(value, name) \
  case name: return #name;
    HAILORT_DOUBLE_STATUSES(HAILORT_DOUBLE_NAME)
#undef HAILORT_DOUBLE_NAME
    default: return nullptr;
  }
}

// As hailort.cpp: params must be NULL; a capacity below the count found answers HAILO_INSUFFICIENT_BUFFER with the
// count written back.
hailo_status hailo_scan_devices(void* params, hailo_device_id_t* device_ids, size_t* device_ids_length) {
  State& s = state();
  std::lock_guard lock(s.mu);
  record(s, "hailo_scan_devices");
  if (params || !device_ids || !device_ids_length) return HAILO_INVALID_ARGUMENT;
  if (*device_ids_length < s.devices.size()) {
    *device_ids_length = s.devices.size();
    return HAILO_INSUFFICIENT_BUFFER;
  }
  for (size_t i = 0; i < s.devices.size(); ++i) {
    std::memset(device_ids[i].id, 0, sizeof device_ids[i].id);
    std::snprintf(device_ids[i].id, sizeof device_ids[i].id, "%s", s.devices[i].c_str());
  }
  *device_ids_length = s.devices.size();
  return HAILO_SUCCESS;
}

hailo_status hailo_init_vdevice_params(hailo_vdevice_params_t* params) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!params) return HAILO_INVALID_ARGUMENT;
  record(s, "hailo_init_vdevice_params");
  params->device_count = 1;
  params->device_ids = nullptr;
  params->scheduling_algorithm = HAILO_SCHEDULING_ALGORITHM_ROUND_ROBIN;
  params->group_id = "UNIQUE";
  params->multi_process_service = false;
  return HAILO_SUCCESS;
}

hailo_status hailo_create_vdevice(hailo_vdevice_params_t* params, hailo_vdevice* vdevice) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!vdevice) return HAILO_INVALID_ARGUMENT;
  std::string line = "hailo_create_vdevice";
  if (params) {
    line += " device_count=" + std::to_string(params->device_count) +
            " scheduling=" + std::to_string(params->scheduling_algorithm) + " device_ids=";
    if (params->device_ids)
      for (uint32_t i = 0; i < params->device_count; ++i)
        line += std::string(i ? "," : "") + std::string(params->device_ids[i].id, strnlen(params->device_ids[i].id, 32));
    else
      line += "none";
  } else {
    line += " params=null";
  }
  record(s, line);
  if (auto st = scripted(s, "hailo_create_vdevice")) return st;
  // With a scanned device list set, an id HailoRT does not see is refused as the real one does (facts §7:
  // HAILO_INVALID_ARGUMENT and "device_id ... not found" in its log); no list set: every id is taken.
  if (params && params->device_ids && !s.devices.empty())
    for (uint32_t i = 0; i < params->device_count; ++i)
      if (std::find(s.devices.begin(), s.devices.end(),
                    std::string(params->device_ids[i].id, strnlen(params->device_ids[i].id, 32))) == s.devices.end())
        return HAILO_INVALID_ARGUMENT;
  void* h = new_handle(s);
  s.vdevices.insert(h);
  *vdevice = static_cast<hailo_vdevice>(h);
  return HAILO_SUCCESS;
}

hailo_status hailo_release_vdevice(hailo_vdevice vdevice) {
  State& s = state();
  std::lock_guard lock(s.mu);
  record(s, "hailo_release_vdevice");
  if (!s.vdevices.erase(vdevice)) return HAILO_INVALID_ARGUMENT;
  s.groups.clear();  // the vdevice owns its configured network groups
  return HAILO_SUCCESS;
}

hailo_status hailo_create_hef_buffer(hailo_hef* hef, const void* buffer, size_t size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!hef || !buffer) return HAILO_INVALID_ARGUMENT;
  record(s, "hailo_create_hef_buffer size=" + std::to_string(size));
  if (auto st = scripted(s, "hailo_create_hef_buffer")) return st;
  const auto* p = static_cast<const uint8_t*>(buffer);
  s.hef.assign(p, p + size);  // HailoRT copies the buffer too
  void* h = new_handle(s);
  s.hefs.insert(h);
  *hef = static_cast<hailo_hef>(h);
  return HAILO_SUCCESS;
}

hailo_status hailo_release_hef(hailo_hef hef) {
  State& s = state();
  std::lock_guard lock(s.mu);
  record(s, "hailo_release_hef");
  return s.hefs.erase(hef) ? HAILO_SUCCESS : HAILO_INVALID_ARGUMENT;
}

hailo_status hailo_init_configure_params_by_vdevice(hailo_hef hef, hailo_vdevice vdevice,
                                                    hailo_configure_params_t* params) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!params) return HAILO_INVALID_ARGUMENT;
  record(s, "hailo_init_configure_params_by_vdevice");
  if (!s.hefs.count(hef) || !s.vdevices.count(vdevice)) return HAILO_INVALID_ARGUMENT;
  // Touch the whole struct as the library does: a too-small allocation shows up under ASan.
  std::memset(params, 0, sizeof *params);
  params->network_group_params_count = 1;
  std::snprintf(params->network_group_params[0].name, HAILO_MAX_NAME_SIZE, "%s", "double_group");
  params->network_group_params[0].batch_size = 0;
  params->network_group_params[0].network_params_by_name_count = 1;
  return HAILO_SUCCESS;
}

hailo_status hailo_configure_vdevice(hailo_vdevice vdevice, hailo_hef hef, hailo_configure_params_t* params,
                                     hailo_configured_network_group* groups, size_t* count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!groups || !count) return HAILO_INVALID_ARGUMENT;
  record(s, "hailo_configure_vdevice capacity=" + std::to_string(*count) + " params=" +
                (params ? std::to_string(params->network_group_params_count) : std::string("null")));
  if (!s.hefs.count(hef) || !s.vdevices.count(vdevice)) return HAILO_INVALID_ARGUMENT;
  if (auto st = scripted(s, "hailo_configure_vdevice")) return st;
  if (*count < 1) {
    *count = 1;
    return HAILO_INSUFFICIENT_BUFFER;
  }
  void* g = new_handle(s);
  s.groups.insert(g);
  groups[0] = static_cast<hailo_configured_network_group>(g);
  *count = 1;
  return HAILO_SUCCESS;
}

hailo_status hailo_make_input_vstream_params(hailo_configured_network_group g, bool, hailo_format_type_t type,
                                             hailo_input_vstream_params_by_name_t* params, size_t* count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return make_params(s, "hailo_make_input_vstream_params", g, type, params, count, 0);
}

hailo_status hailo_make_output_vstream_params(hailo_configured_network_group g, bool, hailo_format_type_t type,
                                              hailo_output_vstream_params_by_name_t* params, size_t* count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return make_params(s, "hailo_make_output_vstream_params", g, type, params, count, 1);
}

hailo_status hailo_create_input_vstreams(hailo_configured_network_group g,
                                         const hailo_input_vstream_params_by_name_t* params, size_t count,
                                         hailo_input_vstream* out) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return create_vstreams(s, "hailo_create_input_vstreams", g, params, count, out, 0);
}

hailo_status hailo_create_output_vstreams(hailo_configured_network_group g,
                                          const hailo_output_vstream_params_by_name_t* params, size_t count,
                                          hailo_output_vstream* out) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return create_vstreams(s, "hailo_create_output_vstreams", g, params, count, out, 1);
}

hailo_status hailo_release_input_vstreams(const hailo_input_vstream* handles, size_t count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return release_vstreams(s, "hailo_release_input_vstreams", handles, count);
}

hailo_status hailo_release_output_vstreams(const hailo_output_vstream* handles, size_t count) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return release_vstreams(s, "hailo_release_output_vstreams", handles, count);
}

hailo_status hailo_get_input_vstream_info(hailo_input_vstream h, hailo_vstream_info_t* info) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return vstream_info(s, h, info, 0, "hailo_get_input_vstream_info");
}

hailo_status hailo_get_output_vstream_info(hailo_output_vstream h, hailo_vstream_info_t* info) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return vstream_info(s, h, info, 1, "hailo_get_output_vstream_info");
}

hailo_status hailo_get_input_vstream_frame_size(hailo_input_vstream h, size_t* size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return frame_size(s, h, size, 0);
}

hailo_status hailo_get_output_vstream_frame_size(hailo_output_vstream h, size_t* size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return frame_size(s, h, size, 1);
}

hailo_status hailo_vstream_write_raw_buffer(hailo_input_vstream h, const void* buffer, size_t size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const VStream* v = vstream_of(s, h, 0);
  record(s, "hailo_vstream_write_raw_buffer " + (v ? v->name : std::string("?")) + " size=" + std::to_string(size));
  if (!v || !buffer) return HAILO_INVALID_ARGUMENT;
  if (auto st = scripted(s, "hailo_vstream_write_raw_buffer")) return st;
  if (size != v->frame) return HAILO_INVALID_ARGUMENT;
  const auto* p = static_cast<const uint8_t*>(buffer);
  s.written[v->name].assign(p, p + size);
  ++s.writes[v->name];
  s.frames.notify_all();
  return HAILO_SUCCESS;
}

hailo_status hailo_vstream_read_raw_buffer(hailo_output_vstream h, void* buffer, size_t size) {
  State& s = state();
  std::unique_lock lock(s.mu);
  const VStream* v = vstream_of(s, h, 1);
  record(s, "hailo_vstream_read_raw_buffer " + (v ? v->name : std::string("?")) + " size=" + std::to_string(size));
  if (!v || !buffer) return HAILO_INVALID_ARGUMENT;
  if (auto st = scripted(s, "hailo_vstream_read_raw_buffer")) return st;
  if (size != v->frame) return HAILO_INVALID_ARGUMENT;
  // The scheduler runs a frame once every input of the group has one; each output yields one frame per run. With no
  // frame ready the read waits, as the real one does, up to the vstream's timeout (hailort: OutputVStream::read ->
  // the pipeline's queue dequeue with the vstream's timeout_ms), then HAILO_TIMEOUT.
  const std::string name = v->name;
  auto ready = [&] {
    uint64_t frames = UINT64_MAX;
    for (const auto& in : s.vstreams)
      if (in.direction == 0) frames = std::min(frames, s.writes[in.name]);
    auto it = s.outputs.find(name);
    return frames != UINT64_MAX && s.reads[name] < frames && it != s.outputs.end() && it->second.size() == size;
  };
  const auto timeout = std::chrono::milliseconds(s.handle_timeout[h]);
  if (!s.frames.wait_for(lock, timeout, ready)) return HAILO_TIMEOUT;
  std::memcpy(buffer, s.outputs[name].data(), size);
  ++s.reads[name];
  return HAILO_SUCCESS;
}

}  // extern "C"
