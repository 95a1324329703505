// aisrv hailo8 — the inference backend "hailo8": load() validates a HEF with our reader and sizes the tensors from
// it (host frame sizes, names, shapes, element types, quantization) so GET_SPEC / GET_TENSOR_INFO work without a
// device; invoke() first checks the device through our driver layer (discovery over sysfs and /dev, the driver
// version, the board), then runs the HEF on it through libhailort loaded at run time, configuring it once per model
// on the first invoke. Without a device, with an unsupported driver, without the library or when HailoRT fails,
// invoke() answers Errc::infer_error saying which — it never produces output that did not come from the device.
// With float I/O the backend converts between float32 tensors and the device's quantized frames with our
// transforms (host_tensor.hpp).
//
// Engine spec: hailo8[:device=/dev/hailoN][,hailort=PATH][,float=in|out|both|none][,timeout=MS][,log-dir=DIR]
//   device   the device node to use (default: every Hailo-8 discovery finds; HailoRT picks the first free one)
//   hailort  the libhailort to load, a path or a soname (default: HailortLibrary::default_candidates())
//   float    which tensors are float32 for the user: quantized inputs (quantized by us with the HEF's qp), outputs
//            (dequantized by us), both, or none (default: the device types, UINT8/UINT16)
//   timeout  milliseconds a vstream write or read may wait for the device (default HailoRT's 10000)
//   log-dir  where libhailort writes its hailort.log (HAILORT_LOGGER_PATH, set when the engine is created unless the
//            environment has it already): default the service's state directory ($STATE_DIRECTORY under systemd),
//            else $RUNTIME_DIRECTORY, $XDG_RUNTIME_DIR/aisrv, /tmp/aisrv-UID — never the working directory
#pragma once

#include <memory>
#include <string>

#include "aisrv/engine/backend.hpp"
#include "aisrv/engine/hailo8/driver/discovery.hpp"
#include "aisrv/engine/hailo8/driver/driver_file.hpp"
#include "aisrv/engine/registry.hpp"

namespace aisrv::engine::hailo8 {

// Which tensors the user reads and writes as float32 (option float=in|out|both|none).
struct FloatIo {
  bool inputs = false;
  bool outputs = false;
};

struct Hailo8Options {
  std::string device;   // "/dev/hailoN" or empty
  std::string hailort;  // library path/name or empty
  FloatIo float_io;
  uint32_t timeout_ms = 0;  // vstream timeout; 0: HailoRT's default (HAILO_DEFAULT_VSTREAM_TIMEOUT_MS, 10 s)
  std::string log_dir;      // libhailort's log directory; empty: the default above
  // Injected by tests only (an engine spec cannot set them): the roots discovery looks in, and what opens device
  // nodes and answers their ioctls (empty: driver::LinuxDriverOpener, the real /dev/hailoN).
  driver::DiscoveryPaths discovery;
  std::shared_ptr<driver::DriverOpener> driver_opener;
};

// Options from an engine spec ("device", "hailort", "float", "timeout", "log-dir"); Errc::invalid_argument for
// anything else.
Result<Hailo8Options> hailo8_options(const engine::EngineSpec& spec);

std::unique_ptr<engine::InferenceBackend> make_hailo8_backend(Hailo8Options options);

// The directory libhailort will log into for these options (see log-dir above), created (mode 0700) when missing,
// and HAILORT_LOGGER_PATH set to it unless the environment already names one; returns the directory in effect.
// Called when a hailo8 engine is created, before the server's threads start (libhailort reads the variable when it
// is loaded).
std::string prepare_hailort_log_dir(const Hailo8Options& options);

// Registers the kind "hailo8" with the registry.
void register_hailo8_backend(engine::BackendRegistry& registry);

}  // namespace aisrv::engine::hailo8
