// aisrv hailo8/runtime — dlopen/dlsym of libhailort and its version check.
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"

#include <dlfcn.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace aisrv::engine::hailo8::runtime {

std::vector<std::string> HailortLibrary::default_candidates() {
  // Every release has its own soname (facts §4.1). 4.20.x are listed so that a box with only those gets a clear
  // refusal naming the version rather than "not found".
  return {"libhailort.so.4.23.0", "libhailort.so",        "libhailort.so.4.22.0", "libhailort.so.4.21.1",
          "libhailort.so.4.21.0", "libhailort.so.4.20.1", "libhailort.so.4.20.0"};
}

// 4.21.0-4.23.0 share one hailort.h (byte-identical, facts §3.9): the layouts declared in hailort_abi.hpp. 4.20.x has
// another hailo_nms_shape_t inside hailo_vstream_info_t (a union of max_bboxes_per_class / max_bboxes_total at 4,
// max_accumulated_mask_size at 8, order_type at 12) and lacks status codes 91-93, so it is refused rather than read
// with the wrong layout.
bool layout_supported(const LibraryVersion& v) { return v.major == 4 && v.minor >= 21 && v.minor <= 23; }

namespace {
template <typename Fn>
bool resolve(void* handle, const char* name, Fn& slot, std::string& missing) {
  dlerror();
  void* sym = dlsym(handle, name);
  if (!sym) {
    missing += missing.empty() ? name : fmt::format(", {}", name);
    return false;
  }
  slot = reinterpret_cast<Fn>(sym);
  return true;
}
}  // namespace

Result<std::unique_ptr<HailortLibrary>> HailortLibrary::try_one(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return make_error(Errc::not_found, "{}", why ? why : "not loadable");
  }
  std::unique_ptr<HailortLibrary> lib(new HailortLibrary());
  lib->handle_ = handle;  // closed by the destructor when this candidate is not taken
  lib->path_ = path;
  std::string missing;
  HailortApi& a = lib->api_;
  resolve(handle, "hailo_get_library_version", a.get_library_version, missing);
  resolve(handle, "hailo_get_status_message", a.get_status_message, missing);
  resolve(handle, "hailo_scan_devices", a.scan_devices, missing);
  resolve(handle, "hailo_init_vdevice_params", a.init_vdevice_params, missing);
  resolve(handle, "hailo_create_vdevice", a.create_vdevice, missing);
  resolve(handle, "hailo_release_vdevice", a.release_vdevice, missing);
  resolve(handle, "hailo_create_hef_buffer", a.create_hef_buffer, missing);
  resolve(handle, "hailo_release_hef", a.release_hef, missing);
  resolve(handle, "hailo_init_configure_params_by_vdevice", a.init_configure_params_by_vdevice, missing);
  resolve(handle, "hailo_configure_vdevice", a.configure_vdevice, missing);
  resolve(handle, "hailo_make_input_vstream_params", a.make_input_vstream_params, missing);
  resolve(handle, "hailo_make_output_vstream_params", a.make_output_vstream_params, missing);
  resolve(handle, "hailo_create_input_vstreams", a.create_input_vstreams, missing);
  resolve(handle, "hailo_create_output_vstreams", a.create_output_vstreams, missing);
  resolve(handle, "hailo_release_input_vstreams", a.release_input_vstreams, missing);
  resolve(handle, "hailo_release_output_vstreams", a.release_output_vstreams, missing);
  resolve(handle, "hailo_get_input_vstream_info", a.get_input_vstream_info, missing);
  resolve(handle, "hailo_get_output_vstream_info", a.get_output_vstream_info, missing);
  resolve(handle, "hailo_get_input_vstream_frame_size", a.get_input_vstream_frame_size, missing);
  resolve(handle, "hailo_get_output_vstream_frame_size", a.get_output_vstream_frame_size, missing);
  resolve(handle, "hailo_vstream_write_raw_buffer", a.vstream_write_raw_buffer, missing);
  resolve(handle, "hailo_vstream_read_raw_buffer", a.vstream_read_raw_buffer, missing);
  if (!missing.empty()) return make_error(Errc::not_supported, "lacks {}: not a usable HailoRT 4.x", missing);

  hailort_abi::hailo_version_t v{};
  const auto status = a.get_library_version(&v);
  if (status != hailort_abi::HAILO_SUCCESS)
    return make_error(Errc::not_supported, "hailo_get_library_version failed with {}", lib->status_name(status));
  lib->version_ = LibraryVersion{v.major, v.minor, v.revision};
  if (!layout_supported(lib->version_))
    return make_error(Errc::not_supported,
                      "HailoRT {}.{}.{} is not supported: this engine uses the C API layouts of HailoRT 4.21 to 4.23",
                      v.major, v.minor, v.revision);
  return lib;
}

Result<HailortHefApi> HailortLibrary::hef_api() const {
  HailortHefApi a;
  std::string missing;
  resolve(handle_, "hailo_create_hef_file", a.create_hef_file, missing);
  resolve(handle_, "hailo_release_hef", a.release_hef, missing);
  resolve(handle_, "hailo_get_network_groups_infos", a.get_network_groups_infos, missing);
  resolve(handle_, "hailo_hef_get_all_stream_infos", a.get_all_stream_infos, missing);
  resolve(handle_, "hailo_hef_get_all_vstream_infos", a.get_all_vstream_infos, missing);
  resolve(handle_, "hailo_get_vstream_frame_size", a.get_vstream_frame_size, missing);
  resolve(handle_, "hailo_get_host_frame_size", a.get_host_frame_size, missing);
  resolve(handle_, "hailo_create_input_transform_context", a.create_input_transform_context, missing);
  resolve(handle_, "hailo_release_input_transform_context", a.release_input_transform_context, missing);
  resolve(handle_, "hailo_transform_frame_by_input_transform_context", a.transform_input, missing);
  resolve(handle_, "hailo_create_output_transform_context", a.create_output_transform_context, missing);
  resolve(handle_, "hailo_release_output_transform_context", a.release_output_transform_context, missing);
  resolve(handle_, "hailo_transform_frame_by_output_transform_context", a.transform_output, missing);
  if (!missing.empty()) return make_error(Errc::not_supported, "{} lacks {}", path_, missing);
  return a;
}

Result<std::unique_ptr<HailortLibrary>> HailortLibrary::open(const std::vector<std::string>& candidates) {
  std::string tried;
  bool any_loaded = false;
  for (const auto& c : candidates) {
    auto lib = try_one(c);
    if (lib) return lib;
    any_loaded = any_loaded || lib.error().code != Errc::not_found;
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", c, lib.error().message);
  }
  if (!any_loaded) return make_error(Errc::not_found, "libhailort not found (tried: {})", tried);
  return make_error(Errc::not_supported, "no usable libhailort (tried: {})", tried);
}

Result<std::unique_ptr<HailortLibrary>> HailortLibrary::open_path(const std::string& path) {
  auto lib = try_one(path);
  if (lib) return lib;
  return make_error(lib.error().code, "the configured libhailort {} cannot be used: {} (no other library is tried)",
                    path, lib.error().message);
}

Result<std::unique_ptr<HailortLibrary>> HailortLibrary::open_configured(const std::string& explicit_path) {
  if (!explicit_path.empty()) return open_path(explicit_path);
  if (const char* env = std::getenv("AISRV_HAILORT_LIBRARY"); env && *env) {
    auto lib = try_one(env);
    if (lib) return lib;
    return make_error(lib.error().code,
                      "AISRV_HAILORT_LIBRARY names {}, which cannot be used: {} (no other library is tried)", env,
                      lib.error().message);
  }
  return open(default_candidates());
}

std::string prepare_hailort_log_dir(const std::string& configured) {
  if (const char* set = std::getenv("HAILORT_LOGGER_PATH"); set && *set) return set;  // the user's choice wins
  std::string dir = configured;
  auto first_of = [](const char* list) {  // systemd passes "A:B" for several directories
    std::string s = list ? list : "";
    return s.substr(0, s.find(':'));
  };
  if (dir.empty()) dir = first_of(std::getenv("STATE_DIRECTORY"));
  if (dir.empty()) dir = first_of(std::getenv("RUNTIME_DIRECTORY"));
  if (dir.empty())
    if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) dir = std::string(x) + "/aisrv";
  if (dir.empty()) dir = fmt::format("/tmp/aisrv-{}", ::geteuid());
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  }
  ::setenv("HAILORT_LOGGER_PATH", dir.c_str(), 0);
  return dir;
}

HailortLibrary::~HailortLibrary() {
  if (handle_) dlclose(handle_);
}

std::string HailortLibrary::status_name(hailort_abi::hailo_status status) const {
  const char* name = api_.get_status_message ? api_.get_status_message(status) : nullptr;
  if (name) return fmt::format("{}({})", name, status);
  return fmt::format("status {}", status);
}

}  // namespace aisrv::engine::hailo8::runtime
