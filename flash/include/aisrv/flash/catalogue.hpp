// aisrv flash — the model store's catalogue as callers see it: per client (= engine number) two slots (A/B), each
// describing one stored model (name, format, segments with their xxHash64), and which slot is active.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace aisrv::flash {

// Model format, detected from the bytes (values are stored on flash).
enum class ModelFormat : uint32_t { unknown = 0, tflite = 1, hef = 2 };
std::string_view model_format_name(ModelFormat f);  // "tflite", "hef", "unknown"
std::optional<ModelFormat> model_format_from_name(std::string_view name);
// "TFL3" at offset 4 -> tflite; big-endian 0x01484546 ("\x01HEF") at offset 0 -> hef; anything else -> unknown.
ModelFormat detect_model_format(std::span<const uint8_t> first_bytes);

// The seed's per-client segments: the model, a parameter block streamed during inference (READ_PARAMETERS),
// operator binaries and execute-in-place code.
enum class SegmentKind : uint32_t { model = 0, parameters = 1, operators = 2, xip = 3 };
inline constexpr size_t kSegmentKinds = 4;
std::string_view segment_kind_name(SegmentKind k);

inline constexpr size_t kMaxNameBytes = 32;

struct Segment {
  uint64_t offset = 0;  // from the start of the slot's extent (model: where its u32 length prefix is)
  uint64_t length = 0;  // bytes (model: without the prefix)
  uint64_t hash = 0;    // xxHash64 (seed 0) of the bytes
};

struct Slot {
  uint64_t extent_offset = 0;  // device offset of the slot's first erase block
  uint64_t extent_length = 0;  // bytes, whole erase blocks; 0 = the slot is empty
  uint64_t seq = 0;            // sequence number of the commit that filled the slot
  ModelFormat format = ModelFormat::unknown;
  std::string name;
  std::array<Segment, kSegmentKinds> segments{};

  bool used() const { return extent_length != 0; }
  const Segment& segment(SegmentKind k) const { return segments[static_cast<size_t>(k)]; }
  uint64_t model_size() const { return segment(SegmentKind::model).length; }
  uint64_t model_hash() const { return segment(SegmentKind::model).hash; }
};

inline constexpr uint8_t kNoActiveSlot = 0xFF;

struct CatalogueEntry {
  uint32_t client = 0;
  uint64_t seq = 0;                  // sequence number of the catalogue record this entry comes from
  uint8_t active = kNoActiveSlot;    // 0 = A, 1 = B, kNoActiveSlot = no model
  std::array<Slot, 2> slots{};

  bool has_model() const { return active < 2 && slots[active].used(); }
  const Slot* active_slot() const { return has_model() ? &slots[active] : nullptr; }
  // The other slot when it still holds an intact earlier model (may be empty).
  const Slot* previous_slot() const {
    if (active >= 2) return nullptr;
    const Slot& s = slots[1 - active];
    return s.used() ? &s : nullptr;
  }
};

inline char slot_letter(uint8_t slot) { return slot == 0 ? 'A' : slot == 1 ? 'B' : '-'; }

}  // namespace aisrv::flash
