// aisrv hailo8/runtime — libhailort loaded at run time with dlopen: the candidate file names (or an injected path),
// the function table resolved with dlsym, and the library version check (the struct layouts we declare are those of
// HailoRT 4.21-4.23, whose hailort.h is one and the same file). Loading a real libhailort runs its static initialiser, which opens log files (hailort.log in
// the working directory unless HAILORT_LOGGER_PATH says otherwise; hailort-c-api-facts.md §4.2).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/runtime/hailort_abi.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::runtime {

// The functions the engine calls.
struct HailortApi {
  hailort_abi::hailo_get_library_version_fn get_library_version = nullptr;
  hailort_abi::hailo_get_status_message_fn get_status_message = nullptr;
  hailort_abi::hailo_scan_devices_fn scan_devices = nullptr;
  hailort_abi::hailo_init_vdevice_params_fn init_vdevice_params = nullptr;
  hailort_abi::hailo_create_vdevice_fn create_vdevice = nullptr;
  hailort_abi::hailo_release_vdevice_fn release_vdevice = nullptr;
  hailort_abi::hailo_create_hef_buffer_fn create_hef_buffer = nullptr;
  hailort_abi::hailo_release_hef_fn release_hef = nullptr;
  hailort_abi::hailo_init_configure_params_by_vdevice_fn init_configure_params_by_vdevice = nullptr;
  hailort_abi::hailo_configure_vdevice_fn configure_vdevice = nullptr;
  hailort_abi::hailo_make_input_vstream_params_fn make_input_vstream_params = nullptr;
  hailort_abi::hailo_make_output_vstream_params_fn make_output_vstream_params = nullptr;
  hailort_abi::hailo_create_input_vstreams_fn create_input_vstreams = nullptr;
  hailort_abi::hailo_create_output_vstreams_fn create_output_vstreams = nullptr;
  hailort_abi::hailo_release_input_vstreams_fn release_input_vstreams = nullptr;
  hailort_abi::hailo_release_output_vstreams_fn release_output_vstreams = nullptr;
  hailort_abi::hailo_get_input_vstream_info_fn get_input_vstream_info = nullptr;
  hailort_abi::hailo_get_output_vstream_info_fn get_output_vstream_info = nullptr;
  hailort_abi::hailo_get_input_vstream_frame_size_fn get_input_vstream_frame_size = nullptr;
  hailort_abi::hailo_get_output_vstream_frame_size_fn get_output_vstream_frame_size = nullptr;
  hailort_abi::hailo_vstream_write_raw_buffer_fn vstream_write_raw_buffer = nullptr;
  hailort_abi::hailo_vstream_read_raw_buffer_fn vstream_read_raw_buffer = nullptr;
};

// The HEF inspection and host transform functions (no device needed), for checking our reader and transforms
// against the library (`aisrv hef verify-hailort`). The engine never calls them.
struct HailortHefApi {
  hailort_abi::hailo_create_hef_file_fn create_hef_file = nullptr;
  hailort_abi::hailo_release_hef_fn release_hef = nullptr;
  hailort_abi::hailo_get_network_groups_infos_fn get_network_groups_infos = nullptr;
  hailort_abi::hailo_hef_get_all_stream_infos_fn get_all_stream_infos = nullptr;
  hailort_abi::hailo_hef_get_all_vstream_infos_fn get_all_vstream_infos = nullptr;
  hailort_abi::hailo_get_vstream_frame_size_fn get_vstream_frame_size = nullptr;
  hailort_abi::hailo_get_host_frame_size_fn get_host_frame_size = nullptr;
  hailort_abi::hailo_create_input_transform_context_fn create_input_transform_context = nullptr;
  hailort_abi::hailo_release_input_transform_context_fn release_input_transform_context = nullptr;
  hailort_abi::hailo_transform_frame_by_input_transform_context_fn transform_input = nullptr;
  hailort_abi::hailo_create_output_transform_context_fn create_output_transform_context = nullptr;
  hailort_abi::hailo_release_output_transform_context_fn release_output_transform_context = nullptr;
  hailort_abi::hailo_transform_frame_by_output_transform_context_fn transform_output = nullptr;
};

struct LibraryVersion {
  uint32_t major = 0, minor = 0, revision = 0;
};

class HailortLibrary {
 public:
  // The names tried when no path is configured: the soname of HailoRT 4.23 first, then the unversioned link, then
  // the other releases whose layouts we implement (each minor release has its own soname, facts §4.1).
  static std::vector<std::string> default_candidates();

  // Takes the first candidate that loads, has every function and a supported version (a name without '/' goes
  // through the dynamic linker's search path); a candidate that fails any of these is closed and the next one tried.
  // The error names every candidate with its reason: Errc::not_found when none loaded at all, Errc::not_supported
  // when some loaded but were refused (missing symbol, unsupported version).
  static Result<std::unique_ptr<HailortLibrary>> open(const std::vector<std::string>& candidates);
  // An explicitly configured library (the engine's hailort= option): tried alone, its failure reported as such.
  static Result<std::unique_ptr<HailortLibrary>> open_path(const std::string& path);
  // The library a user configured: `explicit_path` when not empty, else $AISRV_HAILORT_LIBRARY when set (each tried
  // alone, open_path), else the default candidates (open).
  static Result<std::unique_ptr<HailortLibrary>> open_configured(const std::string& explicit_path);

  ~HailortLibrary();
  HailortLibrary(const HailortLibrary&) = delete;
  HailortLibrary& operator=(const HailortLibrary&) = delete;

  const HailortApi& api() const { return api_; }
  // Resolves the HEF inspection functions on first use; Errc::not_supported naming the missing ones.
  Result<HailortHefApi> hef_api() const;
  const LibraryVersion& version() const { return version_; }
  const std::string& path() const { return path_; }
  // "HAILO_TIMEOUT(4)"; the library's own name of a status when it knows it.
  std::string status_name(hailort_abi::hailo_status status) const;

 private:
  HailortLibrary() = default;
  static Result<std::unique_ptr<HailortLibrary>> try_one(const std::string& path);
  void* handle_ = nullptr;
  std::string path_;
  HailortApi api_;
  LibraryVersion version_;
};

// Where libhailort will write hailort.log, decided before it is loaded: HAILORT_LOGGER_PATH when the environment
// sets it (the user's choice wins), else `configured`, $STATE_DIRECTORY, $RUNTIME_DIRECTORY (systemd; the first of a
// list), $XDG_RUNTIME_DIR/aisrv, /tmp/aisrv-UID in turn; the directory is created (mode 0700) and
// HAILORT_LOGGER_PATH set to it. Returns the directory in effect.
std::string prepare_hailort_log_dir(const std::string& configured);

// Versions whose struct layouts match our declarations.
bool layout_supported(const LibraryVersion& v);

}  // namespace aisrv::engine::hailo8::runtime
