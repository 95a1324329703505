// aisrv hailo8/verify — drives a real libhailort over one HEF (no device): its network groups, stream and vstream
// records and frame sizes against our reader, and its host transforms against ours on the same frames.
#include "aisrv/engine/hailo8/verify/hailort_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "aisrv/engine/hailo8/transform/layout.hpp"
#include "aisrv/engine/hailo8/transform/nms_on_chip.hpp"

namespace aisrv::engine::hailo8::verify {

namespace abi = hailort_abi;
using hef::FormatOrder;
using hef::FormatType;
using Outcome = TransformCheck::Outcome;

namespace {

// Frames larger than this are not transformed (a hostile HEF may describe gigabytes; the shipped ones are < 10 MiB).
constexpr uint64_t kMaxCheckedFrame = uint64_t{256} << 20;
constexpr abi::hailo_status kInsufficientBuffer = abi::HAILO_INSUFFICIENT_BUFFER;

// A deterministic, well-spread value per element (Knuth's multiplicative hash).
uint32_t spread(size_t i, uint32_t seed) { return static_cast<uint32_t>(i * 2654435761u + seed * 40503u); }

bool is_nms_device_order(FormatOrder o) { return o == FormatOrder::nms_on_chip || o == FormatOrder::hailo_nms; }

abi::hailo_transform_params_t params_for(bool float32) {
  abi::hailo_transform_params_t p{};
  p.transform_mode = abi::HAILO_STREAM_TRANSFORM_COPY;
  p.user_buffer_format.type = float32 ? 3u : abi::HAILO_FORMAT_TYPE_AUTO;
  p.user_buffer_format.order = 0;  // AUTO: the default host order
  p.user_buffer_format.flags = 0;
  return p;
}

// Compares two results element by element (T = uint8_t, uint16_t or float; floats bit for bit).
template <typename T>
void compare_elements(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& theirs, TransformCheck& t) {
  const size_t n = std::min(ours.size(), theirs.size()) / sizeof(T);
  t.elements = n;
  for (size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, ours.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&b, theirs.data() + i * sizeof(T), sizeof(T));
    if (std::memcmp(&a, &b, sizeof(T)) == 0) continue;
    ++t.differing;
    const double d = std::fabs(static_cast<double>(a) - static_cast<double>(b));
    t.max_difference = std::isnan(d) ? INFINITY : std::max(t.max_difference, d);
  }
  if (ours.size() != theirs.size()) {
    t.outcome = Outcome::differs;
    t.detail = fmt::format("result sizes differ: aisrv {} bytes, HailoRT {} bytes", ours.size(), theirs.size());
    return;
  }
  t.outcome = t.differing == 0 ? Outcome::bit_exact : Outcome::differs;
}

// Host frame for an input: elements of the stream's type, or in-range floats for the FLOAT32 user format (each a
// quantization level ± a quarter step, so no value sits on a rounding tie, clipped to the HEF's limits).
std::vector<uint8_t> input_host_frame(const hef::StreamInfo& s, size_t elements, bool float32) {
  const uint32_t levels = s.type == FormatType::uint16 ? 65536u : 256u;
  std::vector<uint8_t> out;
  if (!float32) {
    out.resize(elements * hef::format_type_bytes(s.type));
    for (size_t i = 0; i < elements; ++i) {
      const uint32_t q = spread(i, 1) >> 8;
      if (s.type == FormatType::uint16) {
        const uint16_t v = static_cast<uint16_t>(q);
        std::memcpy(out.data() + 2 * i, &v, 2);
      } else {
        out[i] = static_cast<uint8_t>(q);
      }
    }
    return out;
  }
  out.resize(elements * sizeof(float));
  const auto& qp = s.quant;
  const bool limited = qp.limit_max > qp.limit_min;
  for (size_t i = 0; i < elements; ++i) {
    const float q = static_cast<float>((spread(i, 2) >> 8) % levels);
    const float offset = 0.25f * static_cast<float>(static_cast<int>(i % 3) - 1);
    float x = (q + offset - qp.zero_point) * qp.scale;
    if (limited) x = std::clamp(x, qp.limit_min, qp.limit_max);
    std::memcpy(out.data() + i * sizeof(float), &x, sizeof(float));
  }
  return out;
}

// Device frame for an output: every byte set (padding included; both sides must ignore it).
std::vector<uint8_t> output_device_frame(size_t bytes) {
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(spread(i, 3) >> 24);
  return out;
}

// Hardware frame of an on-chip NMS output: per chunk and class a count (0..3, at most max_bboxes_per_class) and that
// many bbox words, the rest of the frame zero.
std::vector<uint8_t> nms_hw_frame(const hef::NmsInfo& n, size_t bytes) {
  std::vector<uint8_t> out(bytes, 0);
  const uint32_t chunks = std::max<uint32_t>(1, n.chunks_per_frame);
  const uint32_t most = std::min<uint32_t>(3, n.max_bboxes_per_class);
  size_t at = 0;
  for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
    for (uint32_t c = 0; c < n.number_of_classes; ++c) {
      const uint16_t count = static_cast<uint16_t>((c * 7 + chunk) % (most + 1));
      if (at + 2 + size_t{count} * n.bbox_size > bytes) return out;
      std::memcpy(out.data() + at, &count, 2);
      at += 2;
      for (uint16_t b = 0; b < count; ++b, at += n.bbox_size) {
        const uint64_t word = (uint64_t{spread(at, 4)} << 32 | spread(at, 5)) & 0x7FFFFFFFFFFFFFFFull;
        std::memcpy(out.data() + at, &word, std::min<size_t>(8, n.bbox_size));
      }
    }
  }
  return out;
}

class Checker {
 public:
  Checker(const runtime::HailortLibrary& lib, const runtime::HailortHefApi& api, HefReport& r)
      : lib_(lib), api_(api), r_(r) {}

  void run(abi::hailo_hef hef, const hef::Hef& ours) {
    // Network groups
    std::vector<abi::hailo_network_group_info_t> groups(abi::HAILO_MAX_NETWORK_GROUPS);
    size_t count = groups.size();
    auto st = api_.get_network_groups_infos(hef, groups.data(), &count);
    if (st != abi::HAILO_SUCCESS) {
      c_.differ("network groups", "read", "hailo_get_network_groups_infos failed: " + lib_.status_name(st));
      return;
    }
    groups.resize(count);
    r_.network_groups = count;
    c_.fact("number of network groups", ours.network_groups.size(), count);
    for (size_t g = 0; g < count; ++g) {
      const std::string name(groups[g].name, strnlen(groups[g].name, sizeof groups[g].name));
      const auto it = std::find_if(ours.network_groups.begin(), ours.network_groups.end(),
                                   [&](const hef::NetworkGroup& x) { return x.name == name; });
      if (it == ours.network_groups.end()) {
        c_.differ("network group " + name, "absent", "listed");
        continue;
      }
      c_.fact("network group " + name + ": position", static_cast<size_t>(it - ours.network_groups.begin()), g);
      c_.fact("network group " + name + ": multi-context", it->multi_context(), groups[g].is_multi_context);
      check_group(hef, *it);
    }
  }

  void finish() {
    r_.facts = c_.facts();
    r_.differences = c_.differences();
  }

 private:
  void check_group(abi::hailo_hef hef, const hef::NetworkGroup& g) {
    // Streams
    std::vector<abi::hailo_stream_info_t> raw(abi::HAILO_MAX_STREAMS_COUNT);
    size_t n = 0;
    auto st = api_.get_all_stream_infos(hef, g.name.c_str(), raw.data(), raw.size(), &n);
    if (st == kInsufficientBuffer && n > raw.size() && n < 4096) {
      raw.resize(n);
      st = api_.get_all_stream_infos(hef, g.name.c_str(), raw.data(), raw.size(), &n);
    }
    if (st != abi::HAILO_SUCCESS) {
      c_.differ(g.name + ": streams", "read", "hailo_hef_get_all_stream_infos failed: " + lib_.status_name(st));
    } else {
      raw.resize(n);
      std::vector<hef::StreamInfo> theirs;
      std::vector<uint32_t> flags(n);
      for (size_t i = 0; i < n; ++i) theirs.push_back(stream_from_hailort(raw[i], &flags[i]));
      std::vector<hef::StreamInfo> ours;
      if (auto in = hef::input_stream_infos(g); in) ours = std::move(*in);
      if (auto out = hef::output_stream_infos(g); out) ours.insert(ours.end(), out->begin(), out->end());
      compare_streams(g.name, ours, theirs, flags, c_);
      r_.streams += n;
      for (size_t i = 0; i < n; ++i) {
        const auto mine = std::find_if(ours.begin(), ours.end(),
                                       [&](const hef::StreamInfo& s) { return s.name == theirs[i].name; });
        if (mine == ours.end()) continue;
        check_host_frame_sizes(g.name, *mine, raw[i]);
        for (bool float32 : {false, true}) r_.transforms.push_back(transform(g.name, *mine, raw[i], float32));
      }
    }
    // Vstreams
    std::vector<abi::hailo_vstream_info_t> vraw(abi::HAILO_MAX_STREAMS_COUNT);
    size_t vn = vraw.size();
    st = api_.get_all_vstream_infos(hef, g.name.c_str(), vraw.data(), &vn);
    if (st == kInsufficientBuffer && vn > vraw.size() && vn < 4096) {
      vraw.resize(vn);
      st = api_.get_all_vstream_infos(hef, g.name.c_str(), vraw.data(), &vn);
    }
    if (st != abi::HAILO_SUCCESS) {
      c_.differ(g.name + ": vstreams", "read", "hailo_hef_get_all_vstream_infos failed: " + lib_.status_name(st));
      return;
    }
    vraw.resize(vn);
    std::vector<hef::VStreamInfo> theirs;
    std::vector<uint32_t> flags(vn);
    for (size_t i = 0; i < vn; ++i) theirs.push_back(vstream_from_hailort(vraw[i], &flags[i]));
    std::vector<hef::VStreamInfo> ours;
    if (auto in = hef::input_vstream_infos(g); in) ours = std::move(*in);
    if (auto out = hef::output_vstream_infos(g); out) ours.insert(ours.end(), out->begin(), out->end());
    compare_vstreams(g.name, ours, theirs, flags, c_);
    r_.vstreams += vn;
    for (size_t i = 0; i < vn; ++i) {
      const auto mine = std::find_if(ours.begin(), ours.end(),
                                     [&](const hef::VStreamInfo& v) { return v.name == theirs[i].name; });
      if (mine == ours.end()) continue;
      const std::string where = fmt::format("{}/{} (vstream)", g.name, mine->name);
      const uint64_t elements = mine->frame_size() / std::max<uint32_t>(1, hef::format_type_bytes(mine->type));
      for (bool float32 : {false, true}) {
        abi::hailo_format_t user{};
        user.type = float32 ? 3u : abi::HAILO_FORMAT_TYPE_AUTO;
        size_t size = 0;
        const auto fs = api_.get_vstream_frame_size(&vraw[i], &user, &size);
        const std::string what = where + (float32 ? ": FLOAT32 frame size" : ": frame size");
        if (fs != abi::HAILO_SUCCESS) {
          c_.differ(what, "computed", "hailo_get_vstream_frame_size failed: " + lib_.status_name(fs));
          continue;
        }
        c_.fact(what, float32 ? elements * 4 : mine->frame_size(), uint64_t{size});
      }
    }
  }

  void check_host_frame_sizes(const std::string& group, const hef::StreamInfo& s,
                              const abi::hailo_stream_info_t& raw) {
    const std::string where = fmt::format("{}/{} (stream)", group, s.name);
    if (s.nms) {
      auto floats = transform::nms_by_class_floats(*s.nms);
      auto p = params_for(true);
      const size_t theirs = api_.get_host_frame_size(&raw, &p);
      if (floats) c_.fact(where + ": FLOAT32 host frame size", uint64_t{*floats * 4}, uint64_t{theirs});
      return;
    }
    const uint64_t elements = uint64_t{s.shape.height} * s.shape.width * s.shape.features;
    for (bool float32 : {false, true}) {
      auto p = params_for(float32);
      const size_t theirs = api_.get_host_frame_size(&raw, &p);
      c_.fact(where + (float32 ? ": FLOAT32 host frame size" : ": host frame size"),
              elements * (float32 ? 4 : hef::format_type_bytes(s.type)), uint64_t{theirs});
    }
  }

  TransformCheck transform(const std::string& group, const hef::StreamInfo& s, const abi::hailo_stream_info_t& raw,
                           bool float32) {
    TransformCheck t;
    t.group = group;
    t.stream = s.name;
    t.input = s.direction == hef::Direction::host_to_device;
    t.user_format = float32 ? "float32" : "default";
    const bool nms = is_nms_device_order(s.order) && s.nms;
    if (s.is_mux) return skip(t, "a mux stream: HailoRT demuxes it into its vstreams, no host transform");
    if (s.transposed) return skip(t, "a transposed stream: our transforms do not transpose");
    if (nms && t.input) return skip(t, "an NMS input stream");
    if (nms && !float32)
      return skip(t, "NMS outputs have only the FLOAT32 user format (HailoRT refuses AUTO for them)");
    if (!nms && !transform::is_layout_order(s.order))
      return skip(t, fmt::format("device order {} has no host transform in aisrv", hef::format_order_name(s.order)));
    if (s.hw_frame_size == 0 || s.hw_frame_size > kMaxCheckedFrame)
      return skip(t, fmt::format("device frame of {} bytes", s.hw_frame_size));

    const auto params = params_for(float32);
    const size_t their_host = api_.get_host_frame_size(&raw, &params);
    if (their_host == 0 || their_host > kMaxCheckedFrame)
      return skip(t, fmt::format("HailoRT's host frame of {} bytes", their_host));

    return t.input ? transform_input(t, s, raw, params, float32, their_host)
                   : transform_output(t, s, raw, params, float32, their_host, nms);
  }

  TransformCheck transform_input(TransformCheck t, const hef::StreamInfo& s, const abi::hailo_stream_info_t& raw,
                                 const abi::hailo_transform_params_t& params, bool float32, size_t their_host) {
    const size_t elements = size_t{s.shape.height} * s.shape.width * s.shape.features;
    const auto host = input_host_frame(s, elements, float32);
    if (host.size() != their_host) {
      t.outcome = Outcome::differs;
      t.detail = fmt::format("host frame sizes differ: aisrv {} bytes, HailoRT {} bytes", host.size(), their_host);
      return t;
    }
    // theirs
    abi::hailo_input_transform_context ctx = nullptr;
    auto st = api_.create_input_transform_context(&raw, &params, &ctx);
    if (st != abi::HAILO_SUCCESS) return refused(t, "hailo_create_input_transform_context", st);
    std::vector<uint8_t> theirs(s.hw_frame_size, 0);
    st = api_.transform_input(ctx, host.data(), host.size(), theirs.data(), theirs.size());
    api_.release_input_transform_context(ctx);
    if (st != abi::HAILO_SUCCESS) return refused(t, "hailo_transform_frame_by_input_transform_context", st);
    // ours
    std::vector<uint8_t> ours(s.hw_frame_size, 0);
    Status done = ok();
    const bool wide = s.type == FormatType::uint16;
    auto dev16 = std::span<uint16_t>(reinterpret_cast<uint16_t*>(ours.data()), ours.size() / 2);
    if (float32) {
      std::span<const float> in(reinterpret_cast<const float*>(host.data()), elements);
      done = wide ? transform::quantize_to_device(in, s.shape, s.quant, s.order, s.hw_shape, dev16)
                  : transform::quantize_to_device(in, s.shape, s.quant, s.order, s.hw_shape, std::span<uint8_t>(ours));
    } else if (wide) {
      std::span<const uint16_t> in(reinterpret_cast<const uint16_t*>(host.data()), elements);
      done = transform::host_to_device(in, s.shape, s.order, s.hw_shape, dev16);
    } else {
      done = transform::host_to_device(std::span<const uint8_t>(host), s.shape, s.order, s.hw_shape,
                                       std::span<uint8_t>(ours));
    }
    if (!done) return aisrv_refused(t, done.error());
    if (wide) compare_elements<uint16_t>(ours, theirs, t);
    else compare_elements<uint8_t>(ours, theirs, t);
    return t;
  }

  TransformCheck transform_output(TransformCheck t, const hef::StreamInfo& s, const abi::hailo_stream_info_t& raw,
                                  const abi::hailo_transform_params_t& params, bool float32, size_t their_host,
                                  bool nms) {
    const auto device = nms ? nms_hw_frame(*s.nms, s.hw_frame_size) : output_device_frame(s.hw_frame_size);
    abi::hailo_output_transform_context ctx = nullptr;
    auto st = api_.create_output_transform_context(&raw, &params, &ctx);
    if (st != abi::HAILO_SUCCESS) return refused(t, "hailo_create_output_transform_context", st);
    std::vector<uint8_t> theirs(their_host, 0);
    st = api_.transform_output(ctx, device.data(), device.size(), theirs.data(), theirs.size());
    api_.release_output_transform_context(ctx);
    if (st != abi::HAILO_SUCCESS) return refused(t, "hailo_transform_frame_by_output_transform_context", st);

    Status done = ok();
    std::vector<uint8_t> ours;
    const bool wide = s.type == FormatType::uint16;
    if (nms) {
      auto floats = transform::nms_by_class_floats(*s.nms);
      if (!floats) return aisrv_refused(t, floats.error());
      ours.assign(*floats * sizeof(float), 0);
      done = transform::nms_hw_frame_to_by_class(device, *s.nms, s.quant,
                                                  std::span<float>(reinterpret_cast<float*>(ours.data()), *floats));
    } else {
      const size_t elements = size_t{s.shape.height} * s.shape.width * s.shape.features;
      std::span<const uint16_t> dev16(reinterpret_cast<const uint16_t*>(device.data()), device.size() / 2);
      if (float32) {
        ours.assign(elements * sizeof(float), 0);
        std::span<float> out(reinterpret_cast<float*>(ours.data()), elements);
        const hef::QuantInfo qps[1] = {s.quant};
        done = wide ? transform::dequantize_from_device(dev16, s.order, s.hw_shape, s.shape, qps, out)
                    : transform::dequantize_from_device(std::span<const uint8_t>(device), s.order, s.hw_shape,
                                                        s.shape, qps, out);
      } else {
        ours.assign(elements * hef::format_type_bytes(s.type), 0);
        done = wide ? transform::device_to_host(dev16, s.order, s.hw_shape, s.shape,
                                                std::span<uint16_t>(reinterpret_cast<uint16_t*>(ours.data()), elements))
                    : transform::device_to_host(std::span<const uint8_t>(device), s.order, s.hw_shape, s.shape,
                                                std::span<uint8_t>(ours));
      }
    }
    if (!done) return aisrv_refused(t, done.error());
    if (float32 || nms) compare_elements<float>(ours, theirs, t);
    else if (wide) compare_elements<uint16_t>(ours, theirs, t);
    else compare_elements<uint8_t>(ours, theirs, t);
    return t;
  }

  static TransformCheck skip(TransformCheck t, std::string why) {
    t.outcome = Outcome::skipped;
    t.detail = std::move(why);
    return t;
  }
  TransformCheck refused(TransformCheck t, const char* call, abi::hailo_status st) const {
    t.outcome = Outcome::hailort_refused;
    t.detail = fmt::format("{} failed: {}", call, lib_.status_name(st));
    return t;
  }
  static TransformCheck aisrv_refused(TransformCheck t, const Error& e) {
    t.outcome = Outcome::aisrv_refused;
    t.detail = e.message;
    return t;
  }

  const runtime::HailortLibrary& lib_;
  const runtime::HailortHefApi& api_;
  HefReport& r_;
  Comparison c_;
};

// What our reader knows about why HailoRT 4.23 refuses a HEF it reads.
std::string refusal_note(const hef::Hef& h) {
  std::vector<std::string> why;
  if (!h.periph_calculation_in_hailort)
    why.push_back("it lacks the PERIPH_CALCULATION_IN_HAILORT extension (HailoRT >= 4.14 refuses such HEFs)");
  for (const auto& e : h.unsupported_extensions) why.push_back("it uses extension " + e + ", unknown to HailoRT 4.23");
  std::string out;
  for (const auto& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

}  // namespace

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::bit_exact: return "bit-exact";
    case Outcome::differs: return "differs";
    case Outcome::hailort_refused: return "hailort-refused";
    case Outcome::aisrv_refused: return "aisrv-refused";
    case Outcome::skipped: return "skipped";
  }
  return "?";
}

bool HefReport::agrees() const {
  if (!hailort_accepted) return true;  // nothing to compare; reported with HailoRT's status
  if (!aisrv_accepted || !differences.empty()) return false;
  return std::none_of(transforms.begin(), transforms.end(), [](const TransformCheck& t) {
    return t.outcome == Outcome::differs || t.outcome == Outcome::aisrv_refused;
  });
}

std::string HefReport::summary_line() const {
  if (!hailort_accepted) {
    return fmt::format("{}: refused by HailoRT: {}{}{}{}{}", path, hailort_status,
                       hailort_message.empty() ? "" : ": ", hailort_message, hailort_note.empty() ? "" : "; aisrv: ",
                       hailort_note);
  }
  if (!aisrv_accepted) return fmt::format("{}: DIFFERS: HailoRT reads it, aisrv refuses it: {}", path, aisrv_error);
  size_t exact = 0, differ = 0, refused = 0, ours_refused = 0, skipped = 0;
  for (const auto& t : transforms) {
    switch (t.outcome) {
      case Outcome::bit_exact: ++exact; break;
      case Outcome::differs: ++differ; break;
      case Outcome::hailort_refused: ++refused; break;
      case Outcome::aisrv_refused: ++ours_refused; break;
      case Outcome::skipped: ++skipped; break;
    }
  }
  std::string tail = fmt::format("{} network group(s), {} streams, {} vstreams, {} facts, {} of {} transforms "
                                 "bit-exact",
                                 network_groups, streams, vstreams, facts, exact, transforms.size());
  if (refused) tail += fmt::format(", {} refused by HailoRT", refused);
  if (skipped) tail += fmt::format(", {} skipped", skipped);
  if (agrees()) return fmt::format("{}: agrees ({})", path, tail);
  return fmt::format("{}: DIFFERS: {} fact(s), {} transform(s) differ, {} refused only by aisrv ({})", path,
                     differences.size(), differ, ours_refused, tail);
}

std::string first_logged_error(std::string_view log) {
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(at, end - at);
    at = end + 1;
    const size_t level = line.find("[error] ");
    if (level == std::string_view::npos) continue;
    line.remove_prefix(level + 8);
    // then "[file.cpp:NNN] [function] message"
    for (int field = 0; field < 2 && !line.empty() && line.front() == '['; ++field) {
      const size_t close = line.find("] ");
      if (close == std::string_view::npos) break;
      line.remove_prefix(close + 2);
    }
    return std::string(line);
  }
  return {};
}

namespace {
// Bytes of the file from `offset` on (at most 64 KiB), empty when it cannot be read.
std::string read_from(const std::filesystem::path& file, uintmax_t offset) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) return {};
  std::string out;
  if (std::fseek(f, static_cast<long>(offset), SEEK_SET) == 0) {
    out.resize(64 * 1024);
    out.resize(std::fread(out.data(), 1, out.size(), f));
  }
  std::fclose(f);
  return out;
}
}  // namespace

HefReport check_hef(const runtime::HailortLibrary& lib, const runtime::HailortHefApi& api,
                    const std::filesystem::path& path, const std::filesystem::path& hailort_log) {
  HefReport r;
  r.path = path.string();
  auto ours = hef::read_hef_file(path);
  r.aisrv_accepted = ours.ok();
  if (!ours) r.aisrv_error = ours.error().message;

  std::error_code ec;
  const uintmax_t log_before = hailort_log.empty() ? 0 : std::filesystem::file_size(hailort_log, ec);
  abi::hailo_hef hef = nullptr;
  const auto st = api.create_hef_file(&hef, r.path.c_str());
  r.hailort_accepted = st == abi::HAILO_SUCCESS;
  if (!r.hailort_accepted) {
    r.hailort_status = lib.status_name(st);
    if (!hailort_log.empty()) r.hailort_message = first_logged_error(read_from(hailort_log, ec ? 0 : log_before));
    if (ours) r.hailort_note = refusal_note(*ours);
    else r.hailort_note = "refuses it too: " + r.aisrv_error;
    return r;
  }
  if (ours) {
    Checker c(lib, api, r);
    c.run(hef, *ours);
    c.finish();
  }
  api.release_hef(hef);
  return r;
}

nlohmann::json to_json(const HefReport& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["agrees"] = r.agrees();
  j["hailort_accepted"] = r.hailort_accepted;
  if (!r.hailort_accepted) {
    j["hailort_status"] = r.hailort_status;
    if (!r.hailort_message.empty()) j["hailort_message"] = r.hailort_message;
    if (!r.hailort_note.empty()) j["hailort_note"] = r.hailort_note;
  }
  j["aisrv_accepted"] = r.aisrv_accepted;
  if (!r.aisrv_accepted) j["aisrv_error"] = r.aisrv_error;
  j["network_groups"] = r.network_groups;
  j["streams"] = r.streams;
  j["vstreams"] = r.vstreams;
  j["facts"] = r.facts;
  j["differences"] = nlohmann::json::array();
  for (const auto& d : r.differences) j["differences"].push_back({{"where", d.where}, {"aisrv", d.aisrv}, {"hailort", d.hailort}});
  j["transforms"] = nlohmann::json::array();
  for (const auto& t : r.transforms) {
    nlohmann::json x{{"network_group", t.group},
                     {"stream", t.stream},
                     {"direction", t.input ? "input" : "output"},
                     {"user_format", t.user_format},
                     {"outcome", outcome_name(t.outcome)}};
    if (t.outcome == Outcome::bit_exact || t.outcome == Outcome::differs) {
      x["elements"] = t.elements;
      x["differing"] = t.differing;
      x["max_difference"] = t.max_difference;
    }
    if (!t.detail.empty()) x["detail"] = t.detail;
    j["transforms"].push_back(std::move(x));
  }
  return j;
}

}  // namespace aisrv::engine::hailo8::verify
