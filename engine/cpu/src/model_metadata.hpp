// aisrv CPU engine — what a TFLite model says about reading its outputs and feeding its input, for
// GET_MODEL_METADATA (docs/protocol.md 3.11). Converters store such facts in files packed into a zip archive appended
// to the flatbuffer (TensorFlow Lite Support's metadata populator; the Ultralytics exporter writes its settings as
// `temp_meta.txt`, a Python dict literal with task, names and imgsz). Read from it:
//   labels          a label file's text (an archive member whose name contains "label"), or Ultralytics' names
//   task            Ultralytics' task (detect, segment, pose, classify -> detection, segmentation, pose, classification)
//   source          "ultralytics" for an Ultralytics export
//   preprocess.fit, preprocess.mean, preprocess.std   how the exporter's pictures were fed (Ultralytics: letterbox,
//                   RGB / 255)
// The archive is hostile input like the rest of the model: every offset and size is checked, members are bounded
// (kMaxMemberBytes), and a model without an archive, or with one we cannot read, simply has no metadata.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace aisrv::engine::cpu {

using MetadataEntries = std::vector<std::pair<std::string, std::string>>;

inline constexpr size_t kMaxMemberBytes = size_t{1} << 20;

MetadataEntries read_model_metadata(std::span<const uint8_t> model);

// The members of a zip archive appended to `bytes` (name and uncompressed contents; stored and deflated members up
// to kMaxMemberBytes, others skipped). Empty when there is no readable archive. Exposed for tests.
std::vector<std::pair<std::string, std::string>> appended_zip_members(std::span<const uint8_t> bytes);

}  // namespace aisrv::engine::cpu
