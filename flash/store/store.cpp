// aisrv flash — ModelStore: open/format, catalogue queries, verified reads, chunked A/B updates, erase.
// The power-cut argument is in docs/flash-format.md ("Why a power cut cannot lose a model").
#include "aisrv/flash/store.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "beside.hpp"
#include "journal.hpp"

namespace aisrv::flash {

namespace detail {

struct XxhStateDeleter {
  void operator()(XXH64_state_t* s) const { XXH64_freeState(s); }
};
using XxhState = std::unique_ptr<XXH64_state_t, XxhStateDeleter>;

struct PendingUpdate {
  uint32_t client = 0;
  uint8_t slot = 0;
  uint64_t extent_offset = 0;
  uint64_t extent_length = 0;
  UpdateInfo info;
  format::SlotPlan plan;
  size_t kind = 0;      // segment the next chunk belongs to
  uint64_t offset = 0;  // offset inside it
  uint64_t written = 0;
  uint64_t total = 0;
  std::array<XxhState, kSegmentKinds> hashes;
  std::array<uint8_t, 8> head{};
  size_t head_len = 0;
  // Staging window [stage_base, stage_base + stage.size()) of the slot's byte stream (extent-relative), with the
  // dirty part [lo, hi) not yet programmed. Windows are aligned to their size, so each is programmed once.
  std::vector<uint8_t> stage;
  uint64_t stage_base = 0;
  uint64_t lo = 0, hi = 0;
  uint64_t prepared_end = 0;  // extent-relative: blocks below this are erased and ready to program
  bool failed = false;
};

}  // namespace detail

namespace {

constexpr size_t kStageBytes = 256 * 1024;
constexpr size_t kReadChunk = 256 * 1024;
constexpr size_t kDirectMin = 64 * 1024;     // aligned stretches this long are programmed from the caller's buffer
constexpr size_t kDirectPiece = 1024 * 1024; // ... in pieces of at most this (blocks are prepared piece by piece)
constexpr size_t kHashBesideMin = 512 * 1024; // chunks this long are hashed on a second thread while programmed

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

ModelStore::ModelStore(FlashDevice& dev, const format::Superblock& sb) : dev_(&dev), sb_(sb) {}
ModelStore::~ModelStore() = default;

Result<std::unique_ptr<ModelStore>> ModelStore::format(FlashDevice& dev, const FormatOptions& options) {
  auto sb = format::plan(dev.geometry(), options.clients);
  if (!sb) return make_error(Errc::flash_error, "cannot format {}: {}", dev.name(), sb.error().message);
  // Superblock block first (so an interrupted format is recognisably not a store), superblock written last.
  AISRV_TRY(dev.erase(0, sb->erase_block));
  AISRV_TRY(detail::Journal::initialise(dev, *sb));
  std::vector<uint8_t> bytes(round_up(format::kSuperblockBytes, sb->write_size), 0xFF);
  const auto enc = format::encode(*sb);
  std::copy(enc.begin(), enc.end(), bytes.begin());
  AISRV_TRY(dev.program(0, bytes));
  AISRV_TRY(dev.sync());
  return open(dev);
}

Result<std::unique_ptr<ModelStore>> ModelStore::open(FlashDevice& dev) {
  if (dev.geometry().size < format::kSuperblockBytes)
    return make_error(Errc::flash_error, "{} is {} bytes: too small to hold a model store", dev.name(),
                      dev.geometry().size);
  std::vector<uint8_t> head(format::kSuperblockBytes);
  AISRV_TRY(dev.read(0, head));
  auto sb = format::decode_superblock(head, dev.geometry());
  if (!sb) return make_error(sb.error().code, "{}: {}", dev.name(), sb.error().message);
  std::unique_ptr<ModelStore> store(new ModelStore(dev, *sb));
  auto journal = detail::Journal::load(dev, *sb, store->notes_);
  if (!journal) return make_error(journal.error().code, "{}: {}", dev.name(), journal.error().message);
  store->journal_ = std::make_unique<detail::Journal>(std::move(*journal));
  // Content of every client's newest record, then no two referenced extents may overlap.
  struct Use {
    uint64_t begin, end;
    uint32_t client;
    uint8_t slot;
  };
  std::vector<Use> uses;
  for (uint32_t c = 0; c < sb->clients; ++c) {
    const auto& n = store->journal_->newest(c);
    if (!n) continue;
    if (auto v = format::validate(n->record, *sb); !v)
      return make_error(Errc::flash_error, "{}: {}", dev.name(), v.error().message);
    for (uint8_t s = 0; s < 2; ++s) {
      const Slot& sl = n->record.slots[s];
      if (sl.used()) uses.push_back({sl.extent_offset, sl.extent_offset + sl.extent_length, c, s});
    }
  }
  std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < uses.size(); ++i)
    if (uses[i].begin < uses[i - 1].end)
      return make_error(Errc::flash_error,
                        "{}: overlapping extents: client {} slot {} (0x{:x}..0x{:x}) and client {} slot {} "
                        "(0x{:x}..0x{:x})",
                        dev.name(), uses[i - 1].client, slot_letter(uses[i - 1].slot), uses[i - 1].begin,
                        uses[i - 1].end, uses[i].client, slot_letter(uses[i].slot), uses[i].begin, uses[i].end);
  return store;
}

std::vector<std::string> ModelStore::notes() const {
  std::lock_guard lock(mu_);
  return notes_;
}

JournalStats ModelStore::journal_stats() const {
  std::lock_guard lock(mu_);
  JournalStats st;
  for (int j = 0; j < 2; ++j) {
    const auto& b = journal_->block_state(j);
    st.blocks[j] = JournalStats::Block{b.block, b.header.has_value(), b.header ? b.header->generation : 0,
                                       b.capacity, b.next_free, b.valid, b.garbage};
  }
  st.active = journal_->active_block();
  st.next_seq = journal_->next_seq();
  st.compactions = journal_->compactions();
  return st;
}

Status ModelStore::check_client(uint32_t client) const {
  if (client >= sb_.clients)
    return make_error(Errc::bad_engine, "engine {} has no place in the model store (clients 0..{})", client,
                      sb_.clients - 1);
  return ok();
}

Status ModelStore::reload_if_needed() {
  if (!dirty_) return ok();
  std::vector<std::string> notes;
  auto journal = detail::Journal::load(*dev_, sb_, notes);
  if (!journal) return make_error(journal.error().code, "re-reading the catalogue after a failed write: {}",
                                  journal.error().message);
  journal_ = std::make_unique<detail::Journal>(std::move(*journal));
  notes_.insert(notes_.end(), notes.begin(), notes.end());
  dirty_ = false;
  return ok();
}

Result<format::Record> ModelStore::current_record(uint32_t client) const {
  const auto& n = journal_->newest(client);
  if (n) return n->record;
  format::Record r;
  r.client = client;
  return r;
}

std::vector<CatalogueEntry> ModelStore::list() const {
  std::lock_guard lock(mu_);
  std::vector<CatalogueEntry> out;
  for (uint32_t c = 0; c < sb_.clients; ++c) out.push_back(current_record(c)->entry());
  return out;
}

Result<CatalogueEntry> ModelStore::entry(uint32_t client) const {
  std::lock_guard lock(mu_);
  AISRV_TRY(check_client(client));
  return current_record(client)->entry();
}

Result<const Slot*> ModelStore::active_slot(uint32_t client) const {
  AISRV_TRY(check_client(client));
  const auto& n = journal_->newest(client);
  if (!n || n->record.active > 1 || !n->record.slots[n->record.active].used())
    return make_error(Errc::no_model, "engine {} has no model in the store", client);
  return &n->record.slots[n->record.active];
}

namespace {

// Where a slot's segments are on the device: the model segment's length prefix checked, and a view of each
// segment's bytes when the device offers one.
struct SegmentSource {
  uint64_t at = 0;
  uint64_t length = 0;
  std::span<const uint8_t> view;  // empty: read through the device
  bool present = false;
};
using SlotSources = std::array<SegmentSource, kSegmentKinds>;

Result<SlotSources> locate_slot(FlashDevice& dev, uint32_t client, const Slot& s) {
  SlotSources src;
  for (size_t k = 0; k < kSegmentKinds; ++k) {
    const Segment& seg = s.segments[k];
    if (k != 0 && seg.length == 0) continue;
    uint64_t at = s.extent_offset + seg.offset;
    if (k == 0) {
      uint8_t prefix[4];
      AISRV_TRY(dev.read(at, prefix));
      const uint32_t len = uint32_t{prefix[0]} | uint32_t{prefix[1]} << 8 | uint32_t{prefix[2]} << 16 |
                           uint32_t{prefix[3]} << 24;
      if (len != seg.length)
        return make_error(Errc::flash_error,
                          "engine {} model '{}': stored length prefix {} differs from the catalogue's {} (corrupt "
                          "flash)",
                          client, s.name, len, seg.length);
      at += format::kModelPrefixBytes;
    }
    src[k] = SegmentSource{at, seg.length, seg.length ? dev.view(at, seg.length) : std::span<const uint8_t>{}, true};
  }
  return src;
}

bool all_viewed(const SlotSources& src) {
  return std::all_of(src.begin(), src.end(),
                     [](const SegmentSource& g) { return !g.present || g.length == 0 || !g.view.empty(); });
}

// Hashes every located segment and compares it with the catalogue. Touches the device only for segments without a
// view, so with all_viewed() it may run beside other device calls.
Status hash_slot(FlashDevice& dev, uint32_t client, const Slot& s, const SlotSources& src) {
  std::vector<uint8_t> buf;
  for (size_t k = 0; k < kSegmentKinds; ++k) {
    const SegmentSource& g = src[k];
    if (!g.present) continue;
    uint64_t h = 0;
    if (!g.view.empty() || g.length == 0) {
      h = XXH64(g.view.data(), g.view.size(), 0);
    } else {
      buf.resize(kReadChunk);
      detail::XxhState st(XXH64_createState());
      XXH64_reset(st.get(), 0);
      for (uint64_t done = 0; done < g.length;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), g.length - done));
        AISRV_TRY(dev.read(g.at + done, std::span(buf.data(), n)));
        XXH64_update(st.get(), buf.data(), n);
        done += n;
      }
      h = XXH64_digest(st.get());
    }
    const uint64_t want = s.segments[k].hash;
    if (h != want)
      return make_error(Errc::flash_error,
                        "engine {} '{}': {} segment xxh64 mismatch (catalogue 0x{:016x}, flash 0x{:016x}): stored "
                        "data is corrupt",
                        client, s.name, segment_kind_name(static_cast<SegmentKind>(k)), want, h);
  }
  return ok();
}

}  // namespace

Status ModelStore::verify_slot(uint32_t client, const Slot& s) {
  const auto src = AISRV_TRY(locate_slot(*dev_, client, s));
  return hash_slot(*dev_, client, s, src);
}

Status ModelStore::verify(uint32_t client, std::optional<uint8_t> slot) {
  std::lock_guard lock(mu_);
  AISRV_TRY(check_client(client));
  if (!slot) {
    const Slot* s = AISRV_TRY(active_slot(client));
    return verify_slot(client, *s);
  }
  if (*slot > 1) return make_error(Errc::invalid_argument, "slot {} is neither A (0) nor B (1)", *slot);
  const auto rec = AISRV_TRY(current_record(client));
  if (!rec.slots[*slot].used())
    return make_error(Errc::no_model, "engine {} slot {} is empty", client, slot_letter(*slot));
  return verify_slot(client, rec.slots[*slot]);
}

Result<std::vector<uint8_t>> ModelStore::read_model(uint32_t client) {
  std::lock_guard lock(mu_);
  const Slot* s = AISRV_TRY(active_slot(client));
  const Segment& seg = s->segment(SegmentKind::model);
  uint8_t prefix[4];
  AISRV_TRY(dev_->read(s->extent_offset + seg.offset, prefix));
  const uint32_t len =
      uint32_t{prefix[0]} | uint32_t{prefix[1]} << 8 | uint32_t{prefix[2]} << 16 | uint32_t{prefix[3]} << 24;
  if (len != seg.length)
    return make_error(Errc::flash_error,
                      "engine {} model '{}': stored length prefix {} differs from the catalogue's {} (corrupt flash)",
                      client, s->name, len, seg.length);
  std::vector<uint8_t> out(seg.length);
  const uint64_t at = s->extent_offset + seg.offset + format::kModelPrefixBytes;
  uint64_t h = 0;
  const auto view = dev_->view(at, out.size());
  if (!view.empty()) {
    // Copy from the device's view; a large model is hashed on a second thread meanwhile (the same bytes: nothing
    // programs while the lock is held).
    if (view.size() >= kHashBesideMin) {
      auto hashing = detail::run_beside([view] { return XXH64(view.data(), view.size(), 0); });
      std::memcpy(out.data(), view.data(), view.size());
      h = hashing.get();
    } else {
      std::memcpy(out.data(), view.data(), view.size());
      h = XXH64(out.data(), out.size(), 0);
    }
  } else {
    // Read and hash piece by piece while each piece is still in the cache.
    detail::XxhState st(XXH64_createState());
    XXH64_reset(st.get(), 0);
    for (uint64_t done = 0; done < out.size();) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kReadChunk, out.size() - done));
      AISRV_TRY(dev_->read(at + done, std::span(out.data() + done, n)));
      XXH64_update(st.get(), out.data() + done, n);
      done += n;
    }
    h = XXH64_digest(st.get());
  }
  if (h != seg.hash)
    return make_error(Errc::flash_error,
                      "engine {} model '{}': xxh64 mismatch (catalogue 0x{:016x}, flash 0x{:016x}): stored model is "
                      "corrupt",
                      client, s->name, seg.hash, h);
  return out;
}

Status ModelStore::read_model_range(uint32_t client, uint64_t offset, std::span<uint8_t> out) {
  std::lock_guard lock(mu_);
  const Slot* s = AISRV_TRY(active_slot(client));
  const Segment& seg = s->segment(SegmentKind::model);
  if (offset > seg.length || out.size() > seg.length - offset)
    return make_error(Errc::bad_length, "read of {} bytes at offset {} is outside engine {}'s model of {} bytes",
                      out.size(), offset, client, seg.length);
  return dev_->read(s->extent_offset + seg.offset + format::kModelPrefixBytes + offset, out);
}

Result<std::vector<uint8_t>> ModelStore::read_parameters(uint32_t client, uint64_t offset, uint64_t size) {
  std::lock_guard lock(mu_);
  const Slot* s = AISRV_TRY(active_slot(client));
  const Segment& seg = s->segment(SegmentKind::parameters);
  if (offset > seg.length || size > seg.length - offset)
    return make_error(Errc::bad_length,
                      "parameters [{}, {}+{}) are outside engine {}'s parameter block of {} bytes", offset, offset,
                      size, client, seg.length);
  std::vector<uint8_t> out(size);
  AISRV_TRY(dev_->read(s->extent_offset + seg.offset + offset, out));
  return out;
}

Result<std::vector<uint8_t>> ModelStore::read_segment(uint32_t client, SegmentKind kind) {
  std::lock_guard lock(mu_);
  const Slot* s = AISRV_TRY(active_slot(client));
  const Segment& seg = s->segment(kind);
  const uint64_t prefix = kind == SegmentKind::model ? format::kModelPrefixBytes : 0;
  std::vector<uint8_t> out(seg.length);
  AISRV_TRY(dev_->read(s->extent_offset + seg.offset + prefix, out));
  const uint64_t h = format::xxh64(out);
  if (h != seg.hash)
    return make_error(Errc::flash_error, "engine {} '{}': {} segment xxh64 mismatch (catalogue 0x{:016x}, flash "
                                         "0x{:016x}): stored data is corrupt",
                      client, s->name, segment_kind_name(kind), seg.hash, h);
  return out;
}

// ---------------------------------------------------------------------------------------------- allocation

std::optional<uint64_t> ModelStore::find_free(uint64_t blocks_needed, uint32_t client) const {
  std::vector<std::pair<uint64_t, uint64_t>> used;  // [begin, end) byte offsets
  for (uint32_t c = 0; c < sb_.clients; ++c) {
    const auto& n = journal_->newest(c);
    if (!n) continue;
    for (const Slot& s : n->record.slots)
      if (s.used()) used.emplace_back(s.extent_offset, s.extent_offset + s.extent_length);
  }
  for (const auto& [c, p] : pending_)
    if (c != client) used.emplace_back(p->extent_offset, p->extent_offset + p->extent_length);
  std::sort(used.begin(), used.end());
  const uint64_t need = blocks_needed * sb_.erase_block;
  uint64_t cursor = sb_.data_begin();
  for (const auto& [b, e] : used) {
    if (b >= cursor && b - cursor >= need) return cursor;
    cursor = std::max(cursor, e);
  }
  if (sb_.data_end() >= cursor && sb_.data_end() - cursor >= need) return cursor;
  return std::nullopt;
}

Status ModelStore::release_slot(uint32_t client, uint8_t slot) {
  auto rec = AISRV_TRY(current_record(client));
  if (rec.active == slot) return make_error(Errc::internal, "refusing to release the active slot of client {}", client);
  rec.slots[slot] = Slot{};
  rec.seq = journal_->next_seq();
  if (auto st = journal_->append(rec); !st) {
    mark_dirty();
    return st;
  }
  return ok();
}

Result<uint64_t> ModelStore::allocate(uint32_t client, uint8_t target_slot, uint64_t bytes) {
  const uint64_t blocks = bytes / sb_.erase_block;
  for (;;) {
    if (auto at = find_free(blocks, client)) return *at;
    // Out of free space: give up earlier models, the updating client's own inactive slot first.
    std::optional<std::pair<uint32_t, uint8_t>> victim;
    const auto own = AISRV_TRY(current_record(client));
    if (own.slots[target_slot].used()) {
      victim = {client, target_slot};
    } else {
      uint64_t largest = 0;
      for (uint32_t c = 0; c < sb_.clients; ++c) {
        const auto& n = journal_->newest(c);
        if (!n) continue;
        for (uint8_t s = 0; s < 2; ++s)
          if (s != n->record.active && n->record.slots[s].used() && n->record.slots[s].extent_length > largest) {
            largest = n->record.slots[s].extent_length;
            victim = {c, s};
          }
      }
    }
    if (!victim) {
      return make_error(Errc::flash_error,
                        "model store full: {} bytes ({} erase blocks) needed, no free run that long in the {}-byte "
                        "data area (erase models to make room)",
                        bytes, blocks, sb_.data_end() - sb_.data_begin());
    }
    AISRV_TRY(release_slot(victim->first, victim->second));
  }
}

// ---------------------------------------------------------------------------------------------- updates

Status ModelStore::begin_update(uint32_t client, const UpdateInfo& info) {
  std::lock_guard lock(mu_);
  AISRV_TRY(check_client(client));
  pending_.erase(client);
  AISRV_TRY(reload_if_needed());
  if (auto n = format::validate_name(info.name); !n) return make_error(Errc::model_error, "{}", n.error().message);
  auto plan = format::plan_slot(sb_, info.sizes);
  if (!plan) {
    const Errc code = plan.error().code == Errc::invalid_argument ? Errc::model_error : plan.error().code;
    return make_error(code, "{}", plan.error().message);
  }
  const auto rec = AISRV_TRY(current_record(client));
  const uint8_t target = rec.active <= 1 ? static_cast<uint8_t>(1 - rec.active) : 0;
  const uint64_t at = AISRV_TRY(allocate(client, target, plan->extent_bytes));

  auto p = std::make_unique<detail::PendingUpdate>();
  p->client = client;
  p->slot = target;
  p->extent_offset = at;
  p->extent_length = plan->extent_bytes;
  p->info = info;
  p->plan = *plan;
  for (auto& h : p->hashes) {
    h.reset(XXH64_createState());
    XXH64_reset(h.get(), 0);
  }
  for (uint64_t s : info.sizes) p->total += s;
  p->stage.assign(std::max<size_t>(kStageBytes, sb_.write_size), 0xFF);
  // The seed's u32 length prefix opens the model segment.
  const auto len = static_cast<uint32_t>(info.sizes[0]);
  const uint8_t prefix[4] = {static_cast<uint8_t>(len), static_cast<uint8_t>(len >> 8),
                             static_cast<uint8_t>(len >> 16), static_cast<uint8_t>(len >> 24)};
  std::memcpy(p->stage.data(), prefix, 4);
  p->lo = 0;
  p->hi = 4;
  pending_[client] = std::move(p);
  return ok();
}

Status ModelStore::prepare_blocks(detail::PendingUpdate& p, uint64_t end) {
  while (p.prepared_end < end) {
    const uint64_t at = p.extent_offset + p.prepared_end;
    auto blank = dev_->is_erased(at, sb_.erase_block);
    if (!blank) return blank.error();
    if (!*blank) AISRV_TRY(dev_->erase(at, sb_.erase_block));
    p.prepared_end += sb_.erase_block;
  }
  return ok();
}

Status ModelStore::flush_stage(detail::PendingUpdate& p) {
  if (p.hi <= p.lo) return ok();
  const uint64_t ws = sb_.write_size;
  const uint64_t lo = p.lo / ws * ws;
  const uint64_t hi = std::min<uint64_t>(round_up(p.hi, ws), p.stage.size());
  AISRV_TRY(prepare_blocks(p, p.stage_base + hi));
  AISRV_TRY(dev_->program(p.extent_offset + p.stage_base + lo, std::span(p.stage.data() + lo, hi - lo)));
  p.lo = p.hi = 0;
  return ok();
}

Status ModelStore::write_chunk(uint32_t client, SegmentKind kind, uint64_t offset, std::span<const uint8_t> bytes) {
  std::lock_guard lock(mu_);
  AISRV_TRY(check_client(client));
  auto it = pending_.find(client);
  if (it == pending_.end())
    return make_error(Errc::bad_command, "no model update in progress for engine {} (begin one first)", client);
  detail::PendingUpdate& p = *it->second;
  if (p.failed)
    return make_error(Errc::flash_error, "the update of engine {} failed earlier; begin it again", client);
  // Finished segments (and empty ones) are skipped.
  while (p.kind + 1 < kSegmentKinds && p.offset == p.info.sizes[p.kind]) {
    ++p.kind;
    p.offset = 0;
  }
  const auto k = static_cast<size_t>(kind);
  if (k >= kSegmentKinds) return make_error(Errc::bad_length, "segment kind {} does not exist", k);
  if (k != p.kind || offset != p.offset)
    return make_error(Errc::bad_length, "chunk for the {} segment at offset {}; expected the {} segment at offset {}",
                      segment_kind_name(kind), offset, segment_kind_name(static_cast<SegmentKind>(p.kind)), p.offset);
  const uint64_t size = p.info.sizes[k];
  if (bytes.size() > size - offset)
    return make_error(Errc::bad_length, "chunk of {} bytes at offset {} overruns the {} segment of {} bytes",
                      bytes.size(), offset, segment_kind_name(kind), size);
  // The hash of what arrived: a large chunk is hashed on a second thread while it is programmed (both only read
  // `bytes`; the future joins before this function returns, on every path).
  XXH64_state_t* arrival = p.hashes[k].get();
  std::future<void> hashing;
  if (bytes.size() >= kHashBesideMin)
    hashing = detail::run_beside([arrival, bytes] { XXH64_update(arrival, bytes.data(), bytes.size()); });
  else
    XXH64_update(arrival, bytes.data(), bytes.size());
  if (k == 0)
    while (p.head_len < p.head.size() && p.head_len < offset + bytes.size()) {
      if (p.head_len >= offset) p.head[p.head_len] = bytes[p.head_len - offset];
      ++p.head_len;
    }
  uint64_t pos = p.plan.segments[k].offset + (k == 0 ? format::kModelPrefixBytes : 0) + offset;
  const uint64_t window = p.stage.size();
  const uint64_t ws = sb_.write_size;
  for (size_t done = 0; done < bytes.size();) {
    const size_t left = bytes.size() - done;
    if (pos % ws == 0 && left >= kDirectMin) {
      // Straight from the caller's buffer: what is staged ends at `pos` and is programmed first, so no byte is
      // programmed twice.
      // Pieces end on kDirectPiece boundaries of the stream, so each erase block is covered by one program.
      const uint64_t to_boundary = kDirectPiece - pos % kDirectPiece;
      const uint64_t n = std::min<uint64_t>(left / ws * ws, to_boundary);
      Status st = flush_stage(p);
      if (st) st = prepare_blocks(p, pos + n);
      if (st) st = dev_->program(p.extent_offset + pos, bytes.subspan(done, static_cast<size_t>(n)));
      if (!st) {
        p.failed = true;
        return st;
      }
      pos += n;
      done += static_cast<size_t>(n);
      continue;
    }
    const uint64_t base = pos / window * window;
    if (base != p.stage_base) {
      if (auto st = flush_stage(p); !st) {
        p.failed = true;
        return st;
      }
      p.stage_base = base;
      std::fill(p.stage.begin(), p.stage.end(), 0xFF);
    }
    const uint64_t rel = pos - base;
    // Stage up to the window's end, or up to the next aligned stretch that can go direct.
    size_t n = static_cast<size_t>(std::min<uint64_t>(window - rel, left));
    if (left >= kDirectMin + ws) n = std::min<size_t>(n, static_cast<size_t>((ws - pos % ws) % ws));
    std::memcpy(p.stage.data() + rel, bytes.data() + done, n);
    if (p.hi <= p.lo) p.lo = rel;
    p.hi = rel + n;
    pos += n;
    done += n;
  }
  if (hashing.valid()) hashing.get();
  p.offset += bytes.size();
  p.written += bytes.size();
  return ok();
}

std::optional<UpdateProgress> ModelStore::update_progress(uint32_t client) const {
  std::lock_guard lock(mu_);
  auto it = pending_.find(client);
  if (it == pending_.end()) return std::nullopt;
  const auto& p = *it->second;
  size_t kind = p.kind;
  uint64_t offset = p.offset;
  while (kind + 1 < kSegmentKinds && offset == p.info.sizes[kind]) {
    ++kind;
    offset = 0;
  }
  return UpdateProgress{p.slot, static_cast<SegmentKind>(kind), offset, p.written, p.total};
}

void ModelStore::abort_update(uint32_t client) {
  std::lock_guard lock(mu_);
  pending_.erase(client);
}

Result<CatalogueEntry> ModelStore::commit_update(uint32_t client) {
  std::lock_guard lock(mu_);
  AISRV_TRY(check_client(client));
  auto result = commit_locked(client);
  pending_.erase(client);  // committed or failed: either way this transfer is over
  return result;
}

Result<CatalogueEntry> ModelStore::commit_locked(uint32_t client) {
  auto it = pending_.find(client);
  if (it == pending_.end())
    return make_error(Errc::bad_command, "no model update in progress for engine {} (begin one first)", client);
  detail::PendingUpdate& p = *it->second;
  if (p.failed) return make_error(Errc::flash_error, "the update of engine {} failed earlier; begin it again", client);
  if (p.written != p.total)
    return make_error(Errc::bad_length, "update of engine {} incomplete: {} of {} bytes received", client, p.written,
                      p.total);
  AISRV_TRY(flush_stage(p));
  AISRV_TRY(prepare_blocks(p, p.extent_length));  // every block of the extent ends up erased or programmed

  Slot slot;
  slot.extent_offset = p.extent_offset;
  slot.extent_length = p.extent_length;
  slot.name = p.info.name;
  slot.format = detect_model_format(std::span(p.head.data(), p.head_len));
  for (size_t k = 0; k < kSegmentKinds; ++k) {
    slot.segments[k] = p.plan.segments[k];
    slot.segments[k].hash = XXH64_digest(p.hashes[k].get());
  }
  if (p.info.expected_hash && *p.info.expected_hash != slot.model_hash())
    return make_error(Errc::crc_error,
                      "engine {}: received model has xxh64 0x{:016x}, the sender announced 0x{:016x} (transfer "
                      "corrupted); the old model stays active",
                      client, slot.model_hash(), *p.info.expected_hash);
  if (p.info.expected_format != ModelFormat::unknown && p.info.expected_format != slot.format)
    return make_error(Errc::model_error, "engine {}: the sender announced a {} model but the bytes are {}", client,
                      model_format_name(p.info.expected_format), model_format_name(slot.format));
  // Read the new slot back: what a later read will see must hash to what was received, and the slot's bytes must be
  // durable before the record that makes them active is written. A read returns the programmed bytes before and
  // after the barrier alike, so when the device offers views the hashing runs beside the barrier.
  const auto located = locate_slot(*dev_, client, slot);
  if (!located)
    return make_error(Errc::flash_error, "verification of the new slot failed, the old model stays active: {}",
                      located.error().message);
  Status verified = ok();
  if (all_viewed(*located)) {
    auto hashing = detail::run_beside([&] { return hash_slot(*dev_, client, slot, *located); });
    Status synced = dev_->sync();
    verified = hashing.get();
    AISRV_TRY(synced);
  } else {
    AISRV_TRY(dev_->sync());
    verified = hash_slot(*dev_, client, slot, *located);
  }
  if (!verified)
    return make_error(Errc::flash_error, "verification of the new slot failed, the old model stays active: {}",
                      verified.error().message);

  auto rec = AISRV_TRY(current_record(client));
  if (rec.active == p.slot)
    return make_error(Errc::internal, "engine {}: slot {} became active during its own update", client,
                      slot_letter(p.slot));
  rec.client = client;
  rec.seq = journal_->next_seq();
  slot.seq = rec.seq;
  rec.slots[p.slot] = slot;
  rec.active = p.slot;
  if (auto st = journal_->append(rec); !st) {
    mark_dirty();
    return make_error(st.error().code, "committing engine {}'s new model failed: {}", client, st.error().message);
  }
  return rec.entry();
}

Result<CatalogueEntry> ModelStore::write_model(uint32_t client, std::string_view name, std::span<const uint8_t> model,
                                               std::span<const uint8_t> parameters) {
  UpdateInfo info;
  info.name = std::string(name);
  info.sizes[0] = model.size();
  info.sizes[1] = parameters.size();
  AISRV_TRY(begin_update(client, info));
  if (auto st = write_chunk(client, SegmentKind::model, 0, model); !st) {
    abort_update(client);
    return st.error();
  }
  if (!parameters.empty())
    if (auto st = write_chunk(client, SegmentKind::parameters, 0, parameters); !st) {
      abort_update(client);
      return st.error();
    }
  return commit_update(client);
}

Status ModelStore::erase(uint32_t client) {
  std::lock_guard lock(mu_);
  AISRV_TRY(check_client(client));
  pending_.erase(client);
  AISRV_TRY(reload_if_needed());
  auto rec = AISRV_TRY(current_record(client));
  if (rec.active == kNoActiveSlot && !rec.slots[0].used() && !rec.slots[1].used()) return ok();
  const auto old = rec.slots;
  rec.client = client;
  rec.seq = journal_->next_seq();
  rec.active = kNoActiveSlot;
  rec.slots = {};
  if (auto st = journal_->append(rec); !st) {
    mark_dirty();
    return st;
  }
  // The blocks are no longer referenced; erase them so the model's bytes do not linger.
  for (const Slot& s : old)
    if (s.used())
      if (auto st = dev_->erase(s.extent_offset, s.extent_length); !st)
        return make_error(st.error().code, "engine {}'s model was removed from the catalogue, but erasing its blocks "
                                           "failed: {}",
                          client, st.error().message);
  return ok();
}

}  // namespace aisrv::flash
