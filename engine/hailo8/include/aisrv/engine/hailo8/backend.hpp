// aisrv hailo8 — the inference backend "hailo8": load() validates a HEF with our reader and sizes the tensors from
// it (host frame sizes, names, shapes, element types, quantization) so GET_SPEC / GET_TENSOR_INFO work without a
// device; invoke() runs the HEF on a Hailo-8 through libhailort loaded at run time, configuring it once per model on
// the first invoke. Without a device node, without the library, or with an unsupported driver/library version,
// invoke() answers Errc::infer_error saying which — it never produces output that did not come from the device.
//
// Engine spec: hailo8[:device=/dev/hailoN][,hailort=PATH]
//   device   the device node to use (default: the first /dev/hailoN; HailoRT picks the first free device)
//   hailort  the libhailort to load, a path or a soname (default: HailortLibrary::default_candidates())
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "aisrv/engine/backend.hpp"
#include "aisrv/engine/registry.hpp"

namespace aisrv::engine::hailo8 {

struct Hailo8Options {
  std::string device;   // "/dev/hailoN" or empty
  std::string hailort;  // library path/name or empty
  // Roots of the device check; tests point them at a directory tree.
  std::filesystem::path dev_root = "/dev";
  std::filesystem::path sysfs_class = "/sys/class/hailo_chardev";
};

// Options from an engine spec ("device", "hailort"); Errc::invalid_argument for anything else.
Result<Hailo8Options> hailo8_options(const engine::EngineSpec& spec);

std::unique_ptr<engine::InferenceBackend> make_hailo8_backend(Hailo8Options options);

// Registers the kind "hailo8" with the registry.
void register_hailo8_backend(engine::BackendRegistry& registry);

}  // namespace aisrv::engine::hailo8
