// aisrv hailo8/hef — the HEF reader: container checks (container.hpp), then our reduced protobuf schema, then the
// metadata model (types.hpp) built the way HailoRT 4.23 builds it (hailo8-facts.md §1.5), with every field from the
// file range-checked. Errors are Errc::model_error with a message naming the problem and the numbers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "aisrv/engine/hailo8/hef/types.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::hef {

// Parses a whole HEF file held in memory.
Result<Hef> read_hef(std::span<const uint8_t> file);
// Reads and parses a file; every error message starts with the path (Errc::not_found / io_error when it cannot
// be read, Errc::model_error from read_hef).
Result<Hef> read_hef_file(const std::filesystem::path& path);

// Stream (device side) and vstream (host side) views of one network of a group, in HailoRT's order: inputs in
// context order, outputs in the group's sorted output order with host ops replacing the core outputs they consume.
// `network` empty, or the group's default network "<group>/<group>", selects every network of the group.
// Errc::model_error when the network has no such layers or an output is missing from the sorted order.
Result<std::vector<StreamInfo>> input_stream_infos(const NetworkGroup& group, std::string_view network = {});
Result<std::vector<StreamInfo>> output_stream_infos(const NetworkGroup& group, std::string_view network = {});
Result<std::vector<VStreamInfo>> input_vstream_infos(const NetworkGroup& group, std::string_view network = {});
Result<std::vector<VStreamInfo>> output_vstream_infos(const NetworkGroup& group, std::string_view network = {});

}  // namespace aisrv::engine::hailo8::hef
