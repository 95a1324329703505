// aisrv protocol — codecs of the model-store command payloads (docs/flash-format.md, "Protocol").
#include "aisrv/protocol/flash_payloads.hpp"

#include "aisrv/protocol/bytes.hpp"

namespace aisrv::protocol {

namespace {

constexpr uint32_t kMaxCatalogueEntries = 4096;

void put_slot(ByteWriter& w, const FlashSlotInfo& s) {
  w.u8(s.slot);
  w.str8(s.name);
  w.u32(s.format);
  w.u64(s.size);
  w.u64(s.xxh64);
  w.u64(s.seq);
  w.u64(s.parameters);
}

FlashSlotInfo get_slot(ByteReader& r) {
  FlashSlotInfo s;
  s.slot = r.u8("slot");
  s.name = r.str8("name");
  s.format = r.u32("format");
  s.size = r.u64("size");
  s.xxh64 = r.u64("xxh64");
  s.seq = r.u64("seq");
  s.parameters = r.u64("parameters");
  return s;
}

}  // namespace

std::string_view flash_format_name(uint32_t format) {
  switch (format) {
    case kFlashFormatAny: return "unknown";
    case kFlashFormatTflite: return "tflite";
    case kFlashFormatHef: return "hef";
    default: return "?";
  }
}

void encode(const FlashBegin& b, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u64(b.size);
  w.u64(b.xxh64.value_or(0));
  w.u32(b.format);
  w.u32(b.xxh64 ? 1u : 0u);
  w.str8(b.name);
}

Result<FlashBegin> decode_flash_begin(std::span<const uint8_t> in) {
  ByteReader r(in);
  FlashBegin b;
  b.size = r.u64("size");
  const uint64_t hash = r.u64("xxh64");
  b.format = r.u32("format");
  const uint32_t flags = r.u32("flags");
  b.name = r.str8("name");
  AISRV_TRY(r.status());
  if (flags & ~1u) return make_error(Errc::protocol_error, "flash begin: unknown flag bits 0x{:x}", flags & ~1u);
  if (flags & 1u) b.xxh64 = hash;
  return b;
}

void encode_flash_chunk(uint64_t offset, std::span<const uint8_t> bytes, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u64(offset);
  w.bytes(bytes);
}

Result<FlashChunk> decode_flash_chunk(std::span<const uint8_t> in) {
  ByteReader r(in);
  FlashChunk c;
  c.offset = r.u64("offset");
  AISRV_TRY(r.status(false));
  c.bytes = in.subspan(8);
  return c;
}

void encode(const FlashCatalogue& c, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u64(c.store_size);
  w.u32(c.erase_block);
  w.u32(c.write_size);
  w.u64(c.data_bytes);
  w.u64(c.free_bytes);
  w.u32(c.read_chunk);
  w.str8(c.device);
  w.u32(static_cast<uint32_t>(c.entries.size()));
  for (const auto& e : c.entries) {
    w.u32(e.client);
    w.u64(e.seq);
    w.u8(static_cast<uint8_t>((e.active ? 1 : 0) | (e.previous ? 2 : 0) | (e.writing ? 4 : 0)));
    if (e.active) put_slot(w, *e.active);
    if (e.previous) put_slot(w, *e.previous);
    if (e.writing) {
      w.u64(e.received);
      w.u64(e.expected);
    }
  }
}

Result<FlashCatalogue> decode_flash_catalogue(std::span<const uint8_t> in) {
  ByteReader r(in);
  FlashCatalogue c;
  c.store_size = r.u64("store_size");
  c.erase_block = r.u32("erase_block");
  c.write_size = r.u32("write_size");
  c.data_bytes = r.u64("data_bytes");
  c.free_bytes = r.u64("free_bytes");
  c.read_chunk = r.u32("read_chunk");
  c.device = r.str8("device");
  const uint32_t n = r.u32("entry_count");
  AISRV_TRY(r.status(false));
  if (n > kMaxCatalogueEntries)
    return make_error(Errc::protocol_error, "flash catalogue: {} entries (at most {})", n, kMaxCatalogueEntries);
  for (uint32_t i = 0; i < n && !r.failed(); ++i) {
    FlashEntry e;
    e.client = r.u32("client");
    e.seq = r.u64("seq");
    const uint8_t flags = r.u8("flags");
    if (flags & ~7u) return make_error(Errc::protocol_error, "flash catalogue entry {}: unknown flags 0x{:x}", i, flags);
    if (flags & 1) e.active = get_slot(r);
    if (flags & 2) e.previous = get_slot(r);
    if (flags & 4) {
      e.writing = true;
      e.received = r.u64("received");
      e.expected = r.u64("expected");
    }
    c.entries.push_back(std::move(e));
  }
  AISRV_TRY(r.status());
  return c;
}

void encode(const FlashWriteState& s, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u8(s.in_progress ? 1 : 0);
  w.u8(s.slot);
  w.u64(s.next_offset);
  w.u64(s.received);
  w.u64(s.expected);
}

Result<FlashWriteState> decode_flash_write_state(std::span<const uint8_t> in) {
  ByteReader r(in);
  FlashWriteState s;
  s.in_progress = r.u8("in_progress") != 0;
  s.slot = r.u8("slot");
  s.next_offset = r.u64("next_offset");
  s.received = r.u64("received");
  s.expected = r.u64("expected");
  AISRV_TRY(r.status());
  return s;
}

}  // namespace aisrv::protocol
