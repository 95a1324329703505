// aisrv hailo8/transform — on-chip NMS: device word stream → hardware frame → HAILO_NMS_BY_CLASS float32.
// Every count and offset read from the device is checked against the frame bounds and max_bboxes_per_class (HailoRT
// only asserts these in debug builds).
#include "aisrv/engine/hailo8/transform/nms_on_chip.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "aisrv/engine/hailo8/common/byte_order.hpp"

namespace aisrv::engine::hailo8::transform {
namespace {

using common::load_le16;
using common::load_le64;
using common::store_le16;

Status check_nms(const NmsInfo& s) {
  if (s.number_of_classes == 0 || s.max_bboxes_per_class == 0) {
    return make_error(Errc::invalid_argument, "NMS shape has {} classes and {} bboxes per class (both must be > 0)",
                      s.number_of_classes, s.max_bboxes_per_class);
  }
  if (s.bbox_size < 8) return make_error(Errc::invalid_argument, "NMS bbox size {} is below 8 bytes", s.bbox_size);
  if (s.burst_size == 0) return make_error(Errc::invalid_argument, "NMS burst size is 0");
  if (s.burst_type != NmsBurstType::h8_bbox && s.burst_type != NmsBurstType::h8_per_class) {
    return make_error(Errc::invalid_argument, "NMS burst type {} is not a Hailo-8 type (H8_BBOX or H8_PER_CLASS)",
                      hef::nms_burst_type_name(s.burst_type));
  }
  if (s.max_bboxes_per_class > 0xFFFF) {
    return make_error(Errc::invalid_argument, "NMS max bboxes per class {} does not fit the 16-bit counter",
                      s.max_bboxes_per_class);
  }
  return ok();
}

uint32_t chunks_of(const NmsInfo& s) { return s.chunks_per_frame == 0 ? 1 : s.chunks_per_frame; }

}  // namespace

NmsBbox decode_nms_bbox(uint64_t w) {
  return NmsBbox{static_cast<uint16_t>((w >> 36) & 0xFFF), static_cast<uint16_t>((w >> 24) & 0xFFF),
                 static_cast<uint16_t>((w >> 12) & 0xFFF), static_cast<uint16_t>(w & 0xFFF),
                 static_cast<uint16_t>(w >> 48)};
}

Result<size_t> nms_hw_frame_bytes(const NmsInfo& s) {
  if (auto st = check_nms(s); !st) return st.error();
  NmsInfo n = s;
  n.chunks_per_frame = chunks_of(s);
  // Bound the factors first so that the 64-bit formula cannot wrap: each ≤ 2^30 keeps the product ≤ 2^61.
  const uint64_t per_class = 2 + uint64_t{n.bbox_size} * std::max(n.burst_size, n.max_bboxes_per_class);
  const uint64_t class_chunks = uint64_t{n.chunks_per_frame} * n.number_of_classes;
  const uint64_t total = per_class > kMaxFrameBytes || class_chunks > kMaxFrameBytes ? 0 : n.hw_frame_size();
  if (total == 0 || total > kMaxFrameBytes) {
    return make_error(Errc::invalid_argument,
                      "NMS hardware frame for {} chunks x {} classes x {} bboxes exceeds {} bytes", n.chunks_per_frame,
                      n.number_of_classes, n.max_bboxes_per_class, kMaxFrameBytes);
  }
  return static_cast<size_t>(total);
}

Result<size_t> nms_by_class_floats(const NmsInfo& s) {
  if (auto st = check_nms(s); !st) return st.error();
  const uint64_t max_bboxes = uint64_t{chunks_of(s)} * s.max_bboxes_per_class;  // chunks are merged per class
  const uint64_t per_class = 1 + 5 * max_bboxes;
  if (per_class > kMaxFrameBytes || hef::nms_by_class_floats(s.number_of_classes, max_bboxes) * 4 > kMaxFrameBytes) {
    return make_error(Errc::invalid_argument, "NMS by-class frame for {} classes x {} bboxes exceeds {} bytes",
                      s.number_of_classes, s.max_bboxes_per_class, kMaxFrameBytes);
  }
  return static_cast<size_t>(hef::nms_by_class_floats(s.number_of_classes, max_bboxes));
}

Result<size_t> nms_wire_to_hw_frame(std::span<const uint8_t> wire, const NmsInfo& s, std::span<uint8_t> hw_frame) {
  const size_t frame_bytes = AISRV_TRY(nms_hw_frame_bytes(s));
  if (hw_frame.size() != frame_bytes) {
    return make_error(Errc::bad_length, "NMS hardware frame buffer is {} bytes, the shape needs {}", hw_frame.size(),
                      frame_bytes);
  }
  const bool burst = s.burst_type == NmsBurstType::h8_per_class;
  if (burst && s.bbox_size != 8) {
    return make_error(Errc::invalid_argument, "NMS burst mode needs 8-byte bboxes, not {}", s.bbox_size);
  }
  const size_t item = burst ? 8 : s.bbox_size;
  const size_t burst_bytes = burst ? size_t{s.burst_size} * 8 : item;
  const uint64_t classes_expected = uint64_t{chunks_of(s)} * s.number_of_classes;

  std::memset(hw_frame.data(), 0, hw_frame.size());
  size_t in = 0;   // wire offset
  size_t out = 0;  // hardware frame offset
  for (uint64_t cls = 0; cls < classes_expected; ++cls) {
    const size_t count_at = out;
    out += 2;
    uint32_t count = 0;
    for (;;) {
      if (in + item > wire.size()) {
        return make_error(Errc::protocol_error,
                          "NMS wire data ended at byte {} after {} of {} class delimiters (class {} has {} bboxes so far)",
                          wire.size(), cls, classes_expected, cls % s.number_of_classes, count);
      }
      const uint64_t word = load_le64(wire.data() + in);
      if (word == kNmsImageDelimiter) {
        if (burst) {
          return make_error(Errc::protocol_error, "NMS image delimiter at wire byte {}: not valid in Hailo-8 burst mode",
                            in);
        }
        in += item;  // bbox mode: HailoRT skips image delimiters
        continue;
      }
      if (word == kNmsDelimiter) {
        // Burst mode: the rest of this burst is padding; the next class starts with the next burst.
        in = burst ? (in / burst_bytes + 1) * burst_bytes : in + item;
        break;
      }
      if (count == s.max_bboxes_per_class) {
        return make_error(Errc::protocol_error, "NMS class {} (chunk {}) has more than {} bboxes at wire byte {}",
                          cls % s.number_of_classes, cls / s.number_of_classes, s.max_bboxes_per_class, in);
      }
      std::memcpy(hw_frame.data() + out, wire.data() + in, item);
      out += s.bbox_size;
      in += item;
      ++count;
    }
    store_le16(hw_frame.data() + count_at, static_cast<uint16_t>(count));
  }
  if (in > wire.size()) {
    return make_error(Errc::protocol_error, "NMS wire data ({} bytes) ends inside the padding of the last {} byte burst",
                      wire.size(), burst_bytes);
  }
  return in;
}

Status nms_hw_frame_to_by_class(std::span<const uint8_t> hw, const NmsInfo& s, const QuantInfo& qp,
                                std::span<float> out) {
  const size_t floats = AISRV_TRY(nms_by_class_floats(s));
  if (out.size() != floats) {
    return make_error(Errc::bad_length, "NMS by-class buffer holds {} floats, the shape needs {}", out.size(), floats);
  }
  const uint32_t chunks = chunks_of(s);
  // Offsets of each chunk's class list, advanced class by class while merging (HailoRT transform__d2h_NMS).
  std::vector<size_t> chunk_at(chunks, 0);
  size_t at = 0;
  for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
    chunk_at[chunk] = at;
    for (uint32_t c = 0; c < s.number_of_classes; ++c) {
      if (at + 2 > hw.size()) {
        return make_error(Errc::protocol_error, "NMS hardware frame ({} bytes) ends inside the counter of chunk {} class {}",
                          hw.size(), chunk, c);
      }
      const uint16_t count = load_le16(hw.data() + at);
      if (count > s.max_bboxes_per_class) {
        return make_error(Errc::protocol_error, "NMS chunk {} class {} reports {} bboxes, the maximum is {}", chunk, c,
                          count, s.max_bboxes_per_class);
      }
      at += 2 + size_t{count} * s.bbox_size;
      if (at > hw.size()) {
        return make_error(Errc::protocol_error, "NMS chunk {} class {}: {} bboxes run past the {} byte frame", chunk,
                          c, count, hw.size());
      }
    }
  }
  const float zp = qp.zero_point, scale = qp.scale;
  auto deq = [zp, scale](uint16_t v) { return (static_cast<float>(v) - zp) * scale; };
  size_t o = 0;
  for (uint32_t c = 0; c < s.number_of_classes; ++c) {
    const size_t count_slot = o++;
    uint32_t total = 0;
    for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
      size_t p = chunk_at[chunk];
      const uint16_t count = load_le16(hw.data() + p);
      p += 2;
      for (uint16_t b = 0; b < count; ++b, p += s.bbox_size) {
        const NmsBbox box = decode_nms_bbox(load_le64(hw.data() + p));
        out[o++] = deq(box.y_min);
        out[o++] = deq(box.x_min);
        out[o++] = deq(box.y_max);
        out[o++] = deq(box.x_max);
        out[o++] = deq(box.score);
      }
      total += count;
      chunk_at[chunk] = p;
    }
    // HailoRT casts the u16 count to float and de-quantizes only the bbox fields; the count stays a plain number.
    out[count_slot] = static_cast<float>(total);
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(o), out.end(), 0.0f);
  return ok();
}

}  // namespace aisrv::engine::hailo8::transform
