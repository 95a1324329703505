// aisrv interpreter — model-store commands: SET_MODEL_PRIMARY/SECONDARY_FLASH (load the engine's stored model,
// hash checked first), the chunked write (SET_FLASH_BEGIN / CHUNK / COMMIT / ABORT), SET_FLASH_ERASE, and the
// read side (GET_FLASH_CATALOGUE, GET_FLASH_MODEL by chunk index, GET_FLASH_WRITE_STATE). Engine N's stored model
// is client N of the store (docs/flash-format.md). Writing, committing, aborting and erasing change the shared store
// (admin); a transfer belongs to the session that began it (Server::claim_flash_transfer).
#include <algorithm>

#include "aisrv/flash/store.hpp"
#include "aisrv/protocol/flash_payloads.hpp"
#include "command_table.hpp"

namespace aisrv::server {
namespace {

using protocol::Command;

constexpr uint32_t kReadChunk = 1024 * 1024;

Result<flash::ModelStore*> store_of(CommandContext& c) {
  flash::ModelStore* s = c.server.store();
  if (!s) return make_error(Errc::not_supported, "no model store is configured (start aisrvd with --flash PATH)");
  return s;
}

uint32_t read_chunk(const Server& s) { return std::min(kReadChunk, s.max_payload()); }

// Wire errors of a payload that does not decode are ERROR_BAD_LENGTH.
Error bad_payload(std::string_view what, const Error& e) {
  return make_error(Errc::bad_length, "{}: {}", what, e.message);
}

Status load_from_flash(CommandContext& c, engine::Placement placement) {
  auto* store = AISRV_TRY(store_of(c));
  auto bytes = store->read_model(c.slot->number());
  if (!bytes) {
    Error e = std::move(bytes).error();
    // A stored model that fails its length or hash check is refused like any malformed model.
    if (e.code == Errc::flash_error)
      return make_error(Errc::model_error, "stored model refused, integrity check failed: {}", e.message);
    return e;
  }
  const auto entry = AISRV_TRY(store->entry(c.slot->number()));
  const flash::Slot* s = entry.active_slot();
  AISRV_TRY(c.slot->load_model(*bytes, placement, "flash"));
  c.slot->log().add(fmt::format("loaded stored model '{}' ({} bytes, xxh64 {:016x}, slot {}) from flash",
                                s ? s->name : "", bytes->size(), s ? s->model_hash() : 0,
                                flash::slot_letter(entry.active)));
  return ok();
}

Status set_model_primary_flash(CommandContext& c) { return load_from_flash(c, engine::Placement::arena); }
Status set_model_secondary_flash(CommandContext& c) { return load_from_flash(c, engine::Placement::external); }

protocol::FlashSlotInfo slot_info(uint8_t index, const flash::Slot& s) {
  return {index,
          s.name,
          static_cast<uint32_t>(s.format),
          s.model_size(),
          s.model_hash(),
          s.seq,
          s.segment(flash::SegmentKind::parameters).length};
}

Status get_catalogue(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  const auto& sb = store->superblock();
  protocol::FlashCatalogue cat;
  cat.store_size = sb.store_size;
  cat.erase_block = sb.erase_block;
  cat.write_size = sb.write_size;
  cat.data_bytes = sb.data_end() - sb.data_begin();
  cat.read_chunk = read_chunk(c.server);
  cat.device = store->device().name();
  uint64_t used = 0;
  for (const auto& e : store->list()) {
    protocol::FlashEntry pe;
    pe.client = e.client;
    pe.seq = e.seq;
    if (const auto* a = e.active_slot()) pe.active = slot_info(e.active, *a);
    if (const auto* p = e.previous_slot()) pe.previous = slot_info(static_cast<uint8_t>(1 - e.active), *p);
    for (const auto& s : e.slots)
      if (s.used()) used += s.extent_length;
    if (auto prog = store->update_progress(e.client)) {
      pe.writing = true;
      pe.received = prog->written;
      pe.expected = prog->total;
    }
    cat.entries.push_back(std::move(pe));
  }
  cat.free_bytes = used > cat.data_bytes ? 0 : cat.data_bytes - used;
  protocol::encode(cat, c.response.payload);
  return ok();
}

Status get_flash_model(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  const uint32_t engine = c.slot->number();
  const auto entry = AISRV_TRY(store->entry(engine));
  const flash::Slot* s = entry.active_slot();
  if (!s) return make_error(Errc::no_model, "engine {} has no model in the store", engine);
  const uint64_t chunk = read_chunk(c.server);
  const uint64_t size = s->model_size();
  const uint64_t chunks = (size + chunk - 1) / chunk;
  const uint64_t index = c.request.header.tensor;
  if (index >= chunks)
    return make_error(Errc::bad_tensor, "chunk {} does not exist: engine {}'s stored model has {} bytes = {} chunks "
                                        "of {}",
                      index, engine, size, chunks, chunk);
  // The first chunk vouches for the whole model: a corrupt store is reported before any byte goes out.
  if (index == 0) AISRV_TRY(store->verify(engine));
  const uint64_t offset = index * chunk;
  c.response.payload.resize(static_cast<size_t>(std::min(chunk, size - offset)));
  return store->read_model_range(engine, offset, c.response.payload);
}

Status get_write_state(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  protocol::FlashWriteState st;
  if (auto p = store->update_progress(c.slot->number())) {
    st.in_progress = true;
    st.slot = p->slot;
    st.next_offset = p->offset;
    st.received = p->written;
    st.expected = p->total;
  }
  protocol::encode(st, c.response.payload);
  return ok();
}

Status flash_begin(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  auto b = protocol::decode_flash_begin(c.request.payload);
  if (!b) return bad_payload("SET_FLASH_BEGIN payload", b.error());
  if (b->format > protocol::kFlashFormatHef)
    return make_error(Errc::model_error, "unknown model format code {} (0 any, 1 tflite, 2 hef)", b->format);
  flash::UpdateInfo info;
  info.name = b->name;
  info.sizes[0] = b->size;
  info.expected_hash = b->xxh64;
  info.expected_format = static_cast<flash::ModelFormat>(b->format);
  AISRV_TRY(c.server.claim_flash_transfer(c.session, c.slot->number(), true));
  if (auto st = store->begin_update(c.slot->number(), info); !st) {
    c.server.release_flash_transfer(c.session, c.slot->number());
    return st;
  }
  c.slot->log().add(fmt::format("flash write of '{}' ({} bytes) started by {}", b->name, b->size, c.session.name()));
  return ok();
}

Status flash_chunk(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  auto ch = protocol::decode_flash_chunk(c.request.payload);
  if (!ch) return bad_payload("SET_FLASH_CHUNK payload", ch.error());
  AISRV_TRY(c.server.claim_flash_transfer(c.session, c.slot->number(), false));
  return store->write_chunk(c.slot->number(), flash::SegmentKind::model, ch->offset, ch->bytes);
}

Status flash_commit(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  AISRV_TRY(c.server.claim_flash_transfer(c.session, c.slot->number(), false));
  auto committed = store->commit_update(c.slot->number());
  c.server.release_flash_transfer(c.session, c.slot->number());  // a commit ends the transfer, failed or not
  const auto e = AISRV_TRY(std::move(committed));
  const flash::Slot& s = *e.active_slot();
  c.slot->log().add(fmt::format("stored model '{}' ({}, {} bytes, xxh64 {:016x}) committed to slot {}, seq {}",
                                s.name, flash::model_format_name(s.format), s.model_size(), s.model_hash(),
                                flash::slot_letter(e.active), e.seq));
  return ok();
}

Status flash_abort(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  AISRV_TRY(c.server.claim_flash_transfer(c.session, c.slot->number(), false));
  store->abort_update(c.slot->number());
  c.server.release_flash_transfer(c.session, c.slot->number());
  return ok();
}

Status flash_erase(CommandContext& c) {
  auto* store = AISRV_TRY(store_of(c));
  AISRV_TRY(c.server.claim_flash_transfer(c.session, c.slot->number(), false));
  AISRV_TRY(store->erase(c.slot->number()));
  c.slot->log().add("stored model erased from flash");
  return ok();
}

}  // namespace

void add_flash_commands(CommandTable& t) {
  constexpr auto none = Payload::none, any = Payload::any;
  constexpr auto queued = Run::queued;
  t.add(Command::SET_MODEL_PRIMARY_FLASH, {set_model_primary_flash, Scope::engine, none, queued, Access::admin});
  t.add(Command::SET_MODEL_SECONDARY_FLASH, {set_model_secondary_flash, Scope::engine, none, queued, Access::admin});
  t.add(Command::GET_FLASH_CATALOGUE, {get_catalogue, Scope::server, none, queued});
  t.add(Command::GET_FLASH_MODEL, {get_flash_model, Scope::engine, none, queued});
  t.add(Command::GET_FLASH_WRITE_STATE, {get_write_state, Scope::engine, none, queued});
  t.add(Command::SET_FLASH_BEGIN, {flash_begin, Scope::engine, any, queued, Access::admin});
  t.add(Command::SET_FLASH_CHUNK, {flash_chunk, Scope::engine, any, queued, Access::admin});
  t.add(Command::SET_FLASH_COMMIT, {flash_commit, Scope::engine, none, queued, Access::admin});
  t.add(Command::SET_FLASH_ABORT, {flash_abort, Scope::engine, none, queued, Access::admin});
  t.add(Command::SET_FLASH_ERASE, {flash_erase, Scope::engine, none, queued, Access::admin});
}

}  // namespace aisrv::server
