// aisrv hailo8/runtime — one HEF configured on a Hailo-8 through libhailort's C API (hailort-c-api-facts.md §1A):
// a VDevice (scheduler on, so no manual activation), the HEF from memory, the configured network group, one input
// vstream per model input and one output vstream per output with user type AUTO (the device type; FLOAT32 for NMS)
// and the default host order. Frames go in by name, in the order of the specs given to open(); libhailort's handle
// order (sorted by name) is mapped back through hailo_get_*_vstream_info. Every failure is Errc::infer_error and
// names the call, the HailoRT status and what it usually means.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::runtime {

// What the HEF reader says one vstream looks like on the host.
struct TensorSpec {
  std::string name;
  uint32_t format_type = 1;  // hailo_format_type_t: 1 UINT8, 2 UINT16, 3 FLOAT32
  uint64_t frame_size = 0;   // bytes per frame
};

struct NetworkOptions {
  std::optional<std::string> device_id;  // PCI id for VDevice device_ids; none: the first free device
  std::string hef_hint;                  // appended to errors of hailo_create_hef_buffer (e.g. missing extension)
  uint32_t vstream_timeout_ms = 0;       // written into every vstream's params; 0 keeps HailoRT's default
};

struct RunTimes {
  uint64_t write_ns = 0;
  uint64_t read_ns = 0;
};

// libhailort's configured network group with its vstreams (not a server session: the engine keeps one per loaded
// model and configures it again after a failed run).
class ConfiguredNetwork {
 public:
  static Result<std::unique_ptr<ConfiguredNetwork>> open(const HailortLibrary& lib, std::span<const uint8_t> hef_file,
                                                         const std::vector<TensorSpec>& inputs,
                                                         const std::vector<TensorSpec>& outputs,
                                                         const NetworkOptions& options);
  ~ConfiguredNetwork();
  ConfiguredNetwork(const ConfiguredNetwork&) = delete;
  ConfiguredNetwork& operator=(const ConfiguredNetwork&) = delete;

  // Writes every input frame, then reads every output frame (sizes must equal the specs' frame sizes).
  Status run(std::span<const std::span<const uint8_t>> inputs, std::span<const std::span<uint8_t>> outputs,
             RunTimes* times = nullptr);

 private:
  explicit ConfiguredNetwork(const HailortLibrary& lib) : lib_(lib) {}
  Error fail(std::string_view call, hailort_abi::hailo_status status, std::string_view hint = {}) const;

  const HailortLibrary& lib_;
  hailort_abi::hailo_vdevice vdevice_ = nullptr;
  hailort_abi::hailo_hef hef_ = nullptr;
  hailort_abi::hailo_configured_network_group group_ = nullptr;
  std::vector<hailort_abi::hailo_input_vstream> input_handles_;    // libhailort's order
  std::vector<hailort_abi::hailo_output_vstream> output_handles_;  // libhailort's order
  std::vector<size_t> input_slot_;   // spec index -> handle index
  std::vector<size_t> output_slot_;
  std::vector<TensorSpec> inputs_, outputs_;
};

// What a HailoRT status usually means in this sequence (empty when there is nothing to add).
std::string_view status_meaning(hailort_abi::hailo_status status);

}  // namespace aisrv::engine::hailo8::runtime
