// aisrv hailo8/verify — holds aisrv's HEF reader and host transforms to a real libhailort (`aisrv hef verify-hailort`).
// Per HEF: HailoRT's network groups, streams (hailo_hef_get_all_stream_infos) and vstreams
// (hailo_hef_get_all_vstream_infos), with their frame sizes, are compared fact by fact with what our reader derives;
// then every stream's host transform runs through HailoRT (hailo_create_{input,output}_transform_context +
// hailo_transform_frame_by_*) and through ours on the same deterministic, in-range frame, with the default and the
// FLOAT32 user format, and the results are compared byte for byte (the maximum difference when they are not equal).
// No device is needed. The comparisons themselves (compare_*) are pure functions over our metadata model, so tests
// can hold them to hand-made HailoRT records without a library.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aisrv/engine/hailo8/hef/types.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_abi.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8::verify {

// One fact on which aisrv and HailoRT disagree.
struct Difference {
  std::string where;  // "yolov8n/conv41 (output stream): hw_shape"
  std::string aisrv;
  std::string hailort;
};

// Collects compared facts and differences.
class Comparison {
 public:
  template <typename T>
  void fact(const std::string& where, const T& ours, const T& theirs) {
    ++facts_;
    if (!(ours == theirs)) differences_.push_back({where, fmt::format("{}", ours), fmt::format("{}", theirs)});
  }
  void differ(const std::string& where, std::string ours, std::string theirs) {
    ++facts_;
    differences_.push_back({where, std::move(ours), std::move(theirs)});
  }
  size_t facts() const { return facts_; }
  const std::vector<Difference>& differences() const { return differences_; }

 private:
  size_t facts_ = 0;
  std::vector<Difference> differences_;
};

// HailoRT's records in our vocabulary (names as C strings bounded by their arrays, enums as our enums; a value our
// enums do not know is kept numerically and never equals ours).
hef::StreamInfo stream_from_hailort(const hailort_abi::hailo_stream_info_t& s, uint32_t* raw_flags);
hef::VStreamInfo vstream_from_hailort(const hailort_abi::hailo_vstream_info_t& v, uint32_t* raw_flags);

// Every field of one stream / vstream (`where` names it in differences).
void compare_stream(const std::string& where, const hef::StreamInfo& ours, const hef::StreamInfo& theirs,
                    uint32_t their_flags, Comparison& c);
void compare_vstream(const std::string& where, const hef::VStreamInfo& ours, const hef::VStreamInfo& theirs,
                     uint32_t their_flags, Comparison& c);
// Lists compared by name (missing and extra entries are differences) and by position (the order HailoRT lists them
// in is the order users see).
void compare_streams(const std::string& group, const std::vector<hef::StreamInfo>& ours,
                     const std::vector<hef::StreamInfo>& theirs, const std::vector<uint32_t>& their_flags,
                     Comparison& c);
void compare_vstreams(const std::string& group, const std::vector<hef::VStreamInfo>& ours,
                      const std::vector<hef::VStreamInfo>& theirs, const std::vector<uint32_t>& their_flags,
                      Comparison& c);

// One host transform run through both implementations.
struct TransformCheck {
  std::string group;
  std::string stream;
  bool input = true;
  std::string user_format;  // "default" (AUTO type and order) or "float32"
  enum class Outcome { bit_exact, differs, hailort_refused, aisrv_refused, skipped } outcome = Outcome::skipped;
  size_t elements = 0;      // compared elements of the result
  size_t differing = 0;     // of which differ
  double max_difference = 0;  // largest |ours - theirs| over the elements
  std::string detail;       // HailoRT's status, our error, or why it was skipped
};
std::string_view outcome_name(TransformCheck::Outcome o);

struct HefReport {
  std::string path;
  bool hailort_accepted = false;
  std::string hailort_status;  // "HAILO_HEF_NOT_SUPPORTED(92)" when it refused the file
  std::string hailort_message; // the first error HailoRT logged while refusing it (from its hailort.log)
  std::string hailort_note;    // what our reader knows about why (e.g. a missing extension)
  bool aisrv_accepted = false;
  std::string aisrv_error;
  size_t network_groups = 0, streams = 0, vstreams = 0;
  size_t facts = 0;
  std::vector<Difference> differences;
  std::vector<TransformCheck> transforms;

  // Everything HailoRT accepted agrees: no differences, no transform that differs or that only we refuse, and our
  // reader reads what HailoRT reads.
  bool agrees() const;
  std::string summary_line() const;  // one line: "PATH: agrees (N facts, T transforms bit-exact)" or what differs
};

// Runs every check of one HEF; a HEF either side refuses is a report, not an error. `hailort_log`: the hailort.log
// the library writes (HAILORT_LOGGER_PATH), read for the reason of a refusal; empty to skip that.
HefReport check_hef(const runtime::HailortLibrary& lib, const runtime::HailortHefApi& api,
                    const std::filesystem::path& path, const std::filesystem::path& hailort_log = {});

// The message of the first "[error]" line in a piece of hailort.log ("CHECK failed - HEF file length does not
// match"), without HailoRT's timestamp, thread, source and function fields; empty when there is none.
std::string first_logged_error(std::string_view log);

nlohmann::json to_json(const HefReport& r);

}  // namespace aisrv::engine::hailo8::verify
