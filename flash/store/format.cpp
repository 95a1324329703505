// aisrv flash — encoders/decoders and validation of the store's on-flash structures (docs/flash-format.md).
#include "aisrv/flash/format.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace aisrv::flash {

std::string_view model_format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::tflite: return "tflite";
    case ModelFormat::hef: return "hef";
    default: return "unknown";
  }
}

std::optional<ModelFormat> model_format_from_name(std::string_view name) {
  if (name == "tflite") return ModelFormat::tflite;
  if (name == "hef") return ModelFormat::hef;
  if (name == "unknown" || name == "any") return ModelFormat::unknown;
  return std::nullopt;
}

ModelFormat detect_model_format(std::span<const uint8_t> b) {
  if (b.size() >= 8 && b[4] == 'T' && b[5] == 'F' && b[6] == 'L' && b[7] == '3') return ModelFormat::tflite;
  if (b.size() >= 4 && b[0] == 0x01 && b[1] == 0x48 && b[2] == 0x45 && b[3] == 0x46) return ModelFormat::hef;
  return ModelFormat::unknown;
}

std::string_view segment_kind_name(SegmentKind k) {
  switch (k) {
    case SegmentKind::model: return "model";
    case SegmentKind::parameters: return "parameters";
    case SegmentKind::operators: return "operators";
    case SegmentKind::xip: return "xip";
  }
  return "?";
}

}  // namespace aisrv::flash

namespace aisrv::flash::format {

namespace {

constexpr char kSuperMagic[4] = {'A', 'S', 'T', 'R'};
constexpr char kJournalMagic[4] = {'A', 'J', 'N', 'L'};
constexpr char kRecordMagic[4] = {'A', 'R', 'E', 'C'};

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Slot descriptor at p (kSlotBytes).
void put_slot(uint8_t* p, const Slot& s) {
  std::memset(p, 0, kSlotBytes);
  if (!s.used()) return;
  put64(p + 0, s.extent_offset);
  put64(p + 8, s.extent_length);
  put64(p + 16, s.seq);
  put32(p + 24, static_cast<uint32_t>(s.format));
  put32(p + 28, 0);
  std::memcpy(p + 32, s.name.data(), std::min(s.name.size(), kMaxNameBytes));
  for (size_t k = 0; k < kSegmentKinds; ++k) {
    uint8_t* q = p + 64 + 24 * k;
    put64(q + 0, s.segments[k].offset);
    put64(q + 8, s.segments[k].length);
    put64(q + 16, s.segments[k].hash);
  }
}

Slot get_slot(const uint8_t* p) {
  Slot s;
  s.extent_length = get64(p + 8);
  if (s.extent_length == 0) return Slot{};  // empty: every other field is ignored
  s.extent_offset = get64(p + 0);
  s.seq = get64(p + 16);
  s.format = static_cast<ModelFormat>(get32(p + 24));
  const char* name = reinterpret_cast<const char*>(p + 32);
  s.name.assign(name, strnlen(name, kMaxNameBytes));
  for (size_t k = 0; k < kSegmentKinds; ++k) {
    const uint8_t* q = p + 64 + 24 * k;
    s.segments[k] = Segment{get64(q + 0), get64(q + 8), get64(q + 16)};
  }
  return s;
}

}  // namespace

uint64_t xxh64(std::span<const uint8_t> bytes) { return XXH64(bytes.data(), bytes.size(), 0); }

uint32_t version_word(uint8_t major, uint8_t minor) {
  return uint32_t{major} | uint32_t{minor} << 8 | uint32_t{static_cast<uint8_t>(~major)} << 16 |
         uint32_t{static_cast<uint8_t>(~minor)} << 24;
}

std::optional<Version> decode_version_word(uint32_t word) {
  const auto major = static_cast<uint8_t>(word);
  const auto minor = static_cast<uint8_t>(word >> 8);
  if (version_word(major, minor) != word) return std::nullopt;
  return Version{major, minor};
}

Status validate_name(std::string_view name) {
  if (name.size() > kMaxNameBytes)
    return make_error(Errc::invalid_argument, "model name is {} bytes long; at most {} fit", name.size(),
                      kMaxNameBytes);
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7F)
      return make_error(Errc::invalid_argument, "model name has a control character (0x{:02x}) at byte {}", c, i);
  }
  return ok();
}

Result<Superblock> plan(const Geometry& device, uint32_t clients) {
  AISRV_TRY(validate(device));
  if (clients == 0 || clients > kMaxClients)
    return make_error(Errc::invalid_argument, "client count {} is outside 1..{}", clients, kMaxClients);
  Superblock sb;
  sb.erase_block = device.erase_block;
  sb.write_size = device.write_size;
  sb.clients = clients;
  sb.store_size = device.size;
  sb.record_size = static_cast<uint32_t>(round_up(kRecordBytes, device.write_size));
  sb.journal_header_size = static_cast<uint32_t>(round_up(kJournalHeaderBytes, device.write_size));
  const uint64_t blocks = device.block_count();
  if (blocks < 4 || blocks > UINT32_MAX)
    return make_error(Errc::invalid_argument,
                      "a store needs at least 4 erase blocks (superblock, two journal blocks, data); the device has "
                      "{}",
                      blocks);
  sb.data_block_count = static_cast<uint32_t>(blocks - 3);
  if (sb.erase_block < sb.journal_header_size + sb.record_size ||
      sb.records_per_block() < clients + 1)
    return make_error(Errc::invalid_argument,
                      "a {}-byte erase block holds {} catalogue records of {} bytes; {} clients need at least {} "
                      "(use fewer clients or larger erase blocks)",
                      sb.erase_block,
                      sb.erase_block < sb.journal_header_size ? 0 : sb.records_per_block(), sb.record_size,
                      clients, clients + 1);
  return sb;
}

std::vector<uint8_t> encode(const Superblock& sb) {
  std::vector<uint8_t> b(kSuperblockBytes, 0);
  put32(&b[0], version_word(sb.major, sb.minor));
  std::memcpy(&b[4], kSuperMagic, 4);
  put32(&b[8], kSuperblockBytes);
  put32(&b[12], sb.erase_block);
  put32(&b[16], sb.write_size);
  put32(&b[20], sb.clients);
  put64(&b[24], sb.store_size);
  put32(&b[32], sb.journal_block[0]);
  put32(&b[36], sb.journal_block[1]);
  put32(&b[40], sb.data_first_block);
  put32(&b[44], sb.data_block_count);
  put32(&b[48], sb.record_size);
  put32(&b[52], sb.journal_header_size);
  put64(&b[56], xxh64(std::span(b.data(), 56)));
  return b;
}

Result<Superblock> decode_superblock(std::span<const uint8_t> b, const Geometry& device) {
  if (b.size() < kSuperblockBytes)
    return make_error(Errc::flash_error, "device too small for a superblock: {} bytes, {} needed", b.size(),
                      kSuperblockBytes);
  const uint32_t word = get32(&b[0]);
  if (word == 0xFFFFFFFFu)
    return make_error(Errc::flash_error,
                      "flash is erased (version word 0xffffffff): no model store on it; format it first");
  const auto version = decode_version_word(word);
  if (!version)
    return make_error(Errc::flash_error,
                      "not an aisrv model store: version word 0x{:08x} at offset 0 has no valid major/minor "
                      "complement (foreign data)",
                      word);
  if (version->major == 1)
    return make_error(Errc::flash_error,
                      "flash holds the XMOS seed layout {}.{} (read-only header of offsets); this build reads store "
                      "format {}.x — rewrite it with `aisrv flash-image create`",
                      version->major, version->minor, kMajor);
  if (version->major != kMajor)
    return make_error(Errc::flash_error, "store format {}.{} is not supported (this build reads {}.x)",
                      version->major, version->minor, kMajor);
  if (std::memcmp(&b[4], kSuperMagic, 4) != 0 || get32(&b[8]) != kSuperblockBytes)
    return make_error(Errc::flash_error, "version word 0x{:08x} is valid but the superblock magic/length is not "
                                         "(expected \"ASTR\", {} bytes)",
                      word, kSuperblockBytes);
  const uint64_t stored_hash = get64(&b[56]);
  const uint64_t hash = xxh64(b.subspan(0, 56));
  if (stored_hash != hash)
    return make_error(Errc::flash_error, "superblock checksum mismatch (stored 0x{:016x}, computed 0x{:016x}): "
                                         "corrupt superblock",
                      stored_hash, hash);
  Superblock sb;
  sb.major = version->major;
  sb.minor = version->minor;
  sb.erase_block = get32(&b[12]);
  sb.write_size = get32(&b[16]);
  sb.clients = get32(&b[20]);
  sb.store_size = get64(&b[24]);
  sb.journal_block[0] = get32(&b[32]);
  sb.journal_block[1] = get32(&b[36]);
  sb.data_first_block = get32(&b[40]);
  sb.data_block_count = get32(&b[44]);
  sb.record_size = get32(&b[48]);
  sb.journal_header_size = get32(&b[52]);

  if (!is_pow2(sb.erase_block) || sb.erase_block < 512)
    return make_error(Errc::flash_error, "superblock erase-block size {} is not a power of two >= 512",
                      sb.erase_block);
  if (sb.erase_block != device.erase_block)
    return make_error(Errc::flash_error, "store was formatted for {}-byte erase blocks; the device has {}",
                      sb.erase_block, device.erase_block);
  if (!is_pow2(sb.write_size) || sb.write_size > sb.erase_block)
    return make_error(Errc::flash_error, "superblock write size {} is invalid for {}-byte erase blocks",
                      sb.write_size, sb.erase_block);
  if (sb.write_size < device.write_size)
    return make_error(Errc::flash_error, "store was formatted for {}-byte writes; the device needs {}", sb.write_size,
                      device.write_size);
  if (sb.store_size % sb.erase_block != 0 || sb.store_size / sb.erase_block < 4)
    return make_error(Errc::flash_error, "superblock store size {} is not a whole number (>= 4) of erase blocks",
                      sb.store_size);
  if (sb.store_size > device.size)
    return make_error(Errc::flash_error, "truncated image: the store spans {} bytes but the device has only {}",
                      sb.store_size, device.size);
  const uint64_t blocks = sb.store_size / sb.erase_block;
  if (sb.clients == 0 || sb.clients > kMaxClients)
    return make_error(Errc::flash_error, "superblock client count {} is outside 1..{}", sb.clients, kMaxClients);
  if (sb.record_size != round_up(kRecordBytes, sb.write_size) ||
      sb.journal_header_size != round_up(kJournalHeaderBytes, sb.write_size))
    return make_error(Errc::flash_error, "superblock record/header sizes {}/{} do not match format {}.{}",
                      sb.record_size, sb.journal_header_size, sb.major, sb.minor);
  if (sb.erase_block < sb.journal_header_size + sb.record_size || sb.records_per_block() < sb.clients + 1)
    return make_error(Errc::flash_error, "journal blocks of {} bytes cannot hold the records of {} clients",
                      sb.erase_block, sb.clients);
  const uint64_t data_end = uint64_t{sb.data_first_block} + sb.data_block_count;
  for (int j = 0; j < 2; ++j) {
    const uint32_t jb = sb.journal_block[j];
    if (jb == 0 || jb >= blocks)
      return make_error(Errc::flash_error, "journal block {} index {} is outside 1..{}", j, jb, blocks - 1);
    if (jb >= sb.data_first_block && jb < data_end)
      return make_error(Errc::flash_error, "journal block {} (block {}) overlaps the data area (blocks {}..{})", j, jb,
                        sb.data_first_block, data_end - 1);
  }
  if (sb.journal_block[0] == sb.journal_block[1])
    return make_error(Errc::flash_error, "both journal blocks are block {}", sb.journal_block[0]);
  if (sb.data_first_block == 0 || sb.data_block_count == 0 || data_end > blocks)
    return make_error(Errc::flash_error, "data area blocks {}+{} do not fit in the store's {} blocks",
                      sb.data_first_block, sb.data_block_count, blocks);
  return sb;
}

std::vector<uint8_t> encode(const JournalHeader& h) {
  std::vector<uint8_t> b(kJournalHeaderBytes, 0);
  std::memcpy(&b[0], kJournalMagic, 4);
  put32(&b[4], kJournalHeaderBytes);
  put64(&b[8], h.generation);
  put32(&b[16], h.block);
  put32(&b[20], 0);
  put64(&b[24], xxh64(std::span(b.data(), 24)));
  return b;
}

std::optional<JournalHeader> decode_journal_header(std::span<const uint8_t> b) {
  if (b.size() < kJournalHeaderBytes) return std::nullopt;
  if (std::memcmp(&b[0], kJournalMagic, 4) != 0 || get32(&b[4]) != kJournalHeaderBytes) return std::nullopt;
  if (get64(&b[24]) != xxh64(b.subspan(0, 24))) return std::nullopt;
  return JournalHeader{get64(&b[8]), get32(&b[16])};
}

std::vector<uint8_t> encode(const Record& r) {
  std::vector<uint8_t> b(kRecordBytes, 0);
  std::memcpy(&b[0], kRecordMagic, 4);
  put32(&b[4], kRecordBytes);
  put64(&b[8], r.seq);
  put32(&b[16], r.client);
  b[20] = r.active;
  put_slot(&b[24], r.slots[0]);
  put_slot(&b[24 + kSlotBytes], r.slots[1]);
  put64(&b[kRecordBytes - 8], xxh64(std::span(b.data(), kRecordBytes - 8)));
  return b;
}

std::optional<Record> decode_record(std::span<const uint8_t> b) {
  if (b.size() < kRecordBytes) return std::nullopt;
  if (std::memcmp(&b[0], kRecordMagic, 4) != 0 || get32(&b[4]) != kRecordBytes) return std::nullopt;
  if (get64(&b[kRecordBytes - 8]) != xxh64(b.subspan(0, kRecordBytes - 8))) return std::nullopt;
  Record r;
  r.seq = get64(&b[8]);
  r.client = get32(&b[16]);
  r.active = b[20];
  r.slots[0] = get_slot(&b[24]);
  r.slots[1] = get_slot(&b[24 + kSlotBytes]);
  return r;
}

Status validate(const Record& r, const Superblock& sb) {
  if (r.client >= sb.clients)
    return make_error(Errc::flash_error, "catalogue record seq {} is for client {}, but the store has {} clients",
                      r.seq, r.client, sb.clients);
  if (r.active != kNoActiveSlot && r.active > 1)
    return make_error(Errc::flash_error, "catalogue record seq {} (client {}): active slot {} is neither A nor B",
                      r.seq, r.client, r.active);
  if (r.active <= 1 && !r.slots[r.active].used())
    return make_error(Errc::flash_error, "catalogue record seq {} (client {}): active slot {} is empty", r.seq,
                      r.client, slot_letter(r.active));
  for (uint8_t i = 0; i < 2; ++i) {
    const Slot& s = r.slots[i];
    if (!s.used()) continue;
    const auto where = fmt::format("catalogue record seq {} (client {}) slot {}", r.seq, r.client, slot_letter(i));
    if (s.extent_offset % sb.erase_block != 0 || s.extent_length % sb.erase_block != 0)
      return make_error(Errc::flash_error, "{}: extent 0x{:x}+0x{:x} is not aligned to {}-byte erase blocks", where,
                        s.extent_offset, s.extent_length, sb.erase_block);
    if (s.extent_offset < sb.data_begin() || s.extent_offset > sb.data_end() ||
        s.extent_length > sb.data_end() - s.extent_offset)
      return make_error(Errc::flash_error,
                        "{}: extent 0x{:x}+0x{:x} points outside the data area 0x{:x}..0x{:x} (device {} bytes)",
                        where, s.extent_offset, s.extent_length, sb.data_begin(), sb.data_end(), sb.store_size);
    if (auto n = validate_name(s.name); !n) return make_error(Errc::flash_error, "{}: {}", where, n.error().message);
    if (s.format != ModelFormat::unknown && s.format != ModelFormat::tflite && s.format != ModelFormat::hef)
      return make_error(Errc::flash_error, "{}: unknown model format code {}", where,
                        static_cast<uint32_t>(s.format));
    if (s.model_size() == 0) return make_error(Errc::flash_error, "{}: the model segment is empty", where);
    // Segments inside the extent, pairwise disjoint.
    struct Range {
      uint64_t begin, end;
      size_t kind;
    };
    std::vector<Range> ranges;
    for (size_t k = 0; k < kSegmentKinds; ++k) {
      const Segment& seg = s.segments[k];
      const uint64_t prefix = k == 0 ? kModelPrefixBytes : 0;
      if (k != 0 && seg.length == 0) continue;
      if (k == 0 && seg.length > UINT32_MAX)
        return make_error(Errc::flash_error, "{}: model length {} does not fit the u32 length prefix", where,
                          seg.length);
      if (seg.offset > s.extent_length || prefix + seg.length > s.extent_length - seg.offset)
        return make_error(Errc::flash_error,
                          "{}: {} segment 0x{:x}+0x{:x} points outside its extent of 0x{:x} bytes", where,
                          segment_kind_name(static_cast<SegmentKind>(k)), seg.offset, prefix + seg.length,
                          s.extent_length);
      ranges.push_back({seg.offset, seg.offset + prefix + seg.length, k});
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    for (size_t j = 1; j < ranges.size(); ++j)
      if (ranges[j].begin < ranges[j - 1].end)
        return make_error(Errc::flash_error, "{}: {} and {} segments overlap", where,
                          segment_kind_name(static_cast<SegmentKind>(ranges[j - 1].kind)),
                          segment_kind_name(static_cast<SegmentKind>(ranges[j].kind)));
  }
  if (r.slots[0].used() && r.slots[1].used()) {
    const Slot& a = r.slots[0];
    const Slot& b = r.slots[1];
    if (a.extent_offset < b.extent_offset + b.extent_length && b.extent_offset < a.extent_offset + a.extent_length)
      return make_error(Errc::flash_error, "catalogue record seq {} (client {}): slots A and B overlap", r.seq,
                        r.client);
  }
  return ok();
}

Result<SlotPlan> plan_slot(const Superblock& sb, const std::array<uint64_t, kSegmentKinds>& sizes) {
  if (sizes[0] == 0) return make_error(Errc::invalid_argument, "a model of 0 bytes cannot be stored");
  if (sizes[0] > UINT32_MAX)
    return make_error(Errc::invalid_argument, "model of {} bytes is too large (at most {})", sizes[0], UINT32_MAX);
  const uint64_t align = std::max<uint64_t>(kSegmentAlign, sb.write_size);
  const uint64_t limit = sb.data_end() - sb.data_begin();
  SlotPlan p;
  uint64_t pos = 0;
  for (size_t k = 0; k < kSegmentKinds; ++k) {
    const uint64_t bytes = (k == 0 ? kModelPrefixBytes : 0) + sizes[k];
    if (k != 0 && sizes[k] == 0) continue;
    if (sizes[k] > limit || pos > limit)
      return make_error(Errc::flash_error, "{} segment of {} bytes does not fit the data area of {} bytes",
                        segment_kind_name(static_cast<SegmentKind>(k)), sizes[k], limit);
    pos = round_up(pos, align);
    p.segments[k] = Segment{pos, sizes[k], 0};
    pos += bytes;
  }
  p.stream_bytes = pos;
  p.extent_bytes = round_up(pos, sb.erase_block);
  if (p.extent_bytes > limit)
    return make_error(Errc::flash_error, "{} bytes of segments do not fit the data area of {} bytes", pos, limit);
  return p;
}

}  // namespace aisrv::flash::format
