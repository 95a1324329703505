// aisrv flash (internal) — catalogue journal: scan, append, safe compaction (docs/flash-format.md, "Journal").
#include "journal.hpp"

#include <algorithm>

namespace aisrv::flash::detail {

namespace {

bool all_ff(std::span<const uint8_t> b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t c) { return c == 0xFF; });
}

}  // namespace

uint64_t Journal::position_offset(int j, uint32_t pos) const {
  return sb_.block_offset(blocks_[j].block) + sb_.journal_header_size + uint64_t{pos} * sb_.record_size;
}

Result<Journal> Journal::load(FlashDevice& dev, const format::Superblock& sb, std::vector<std::string>& notes) {
  Journal jn(dev, sb);
  jn.newest_.resize(sb.clients);
  std::vector<uint8_t> buf(sb.erase_block);
  // Candidate newest records: (record, block, position); ties on seq are copies made by compaction.
  for (int j = 0; j < 2; ++j) {
    BlockState& st = jn.blocks_[j];
    st.block = sb.journal_block[j];
    st.capacity = sb.records_per_block();
    AISRV_TRY(dev.read(sb.block_offset(st.block), buf));
    const auto head = std::span<const uint8_t>(buf).subspan(0, sb.journal_header_size);
    if (!all_ff(head)) {
      auto h = format::decode_journal_header(head);
      if (!h)
        notes.push_back(fmt::format("journal block {} (erase block {}): header unreadable (interrupted compaction "
                                    "or corruption); its intact records are still used",
                                    j, st.block));
      else if (h->block != st.block)
        notes.push_back(fmt::format("journal block {}: header names erase block {} but sits in block {}; ignored", j,
                                    h->block, st.block));
      else {
        st.header = h;
        jn.max_generation_ = std::max(jn.max_generation_, h->generation);
      }
    }
    for (uint32_t pos = 0; pos < st.capacity; ++pos) {
      const auto rec_bytes =
          std::span<const uint8_t>(buf).subspan(sb.journal_header_size + size_t{pos} * sb.record_size, sb.record_size);
      if (all_ff(rec_bytes)) continue;
      st.next_free = pos + 1;
      auto r = format::decode_record(rec_bytes);
      if (!r) {
        ++st.garbage;
        continue;
      }
      if (r->client >= sb.clients)
        return make_error(Errc::flash_error,
                          "journal block {} position {}: intact catalogue record for client {}, but the store has "
                          "{} clients (hostile or mismatched image)",
                          j, pos, r->client, sb.clients);
      ++st.valid;
      jn.max_seq_ = std::max(jn.max_seq_, r->seq);
      auto& slot = jn.newest_[r->client];
      if (!slot || r->seq > slot->record.seq) {
        slot = Newest{*r, {}};
        slot->in_block[j] = true;
      } else if (r->seq == slot->record.seq) {
        slot->in_block[j] = true;
        if (format::encode(*r) != format::encode(slot->record)) {
          // Same sequence number, different content: only possible with marginal bits read differently over time.
          // Prefer the later position in the active-looking block; report it.
          notes.push_back(fmt::format("client {}: two different records with sequence {}; using the later one",
                                      r->client, r->seq));
          slot->record = *r;
        }
      }
    }
    if (st.garbage)
      notes.push_back(fmt::format("journal block {} (erase block {}): {} unreadable record position(s) ignored "
                                  "(torn write from a power cut, or corruption)",
                                  j, st.block, st.garbage));
  }
  return jn;
}

Status Journal::initialise(FlashDevice& dev, const format::Superblock& sb) {
  for (int j = 0; j < 2; ++j) AISRV_TRY(dev.erase(sb.block_offset(sb.journal_block[j]), sb.erase_block));
  std::vector<uint8_t> head(sb.journal_header_size, 0xFF);
  const auto h = format::encode(format::JournalHeader{1, sb.journal_block[0]});
  std::copy(h.begin(), h.end(), head.begin());
  AISRV_TRY(dev.program(sb.block_offset(sb.journal_block[0]), head));
  return dev.sync();
}

int Journal::active_block() const {
  int best = -1;
  for (int j = 0; j < 2; ++j)
    if (blocks_[j].header && (best < 0 || blocks_[j].header->generation > blocks_[best].header->generation)) best = j;
  return best;
}

bool Journal::safe_to_erase(int j) const {
  for (const auto& n : newest_)
    if (n && !n->in_block[1 - j]) return false;
  return true;
}

Status Journal::program_record(int j, uint32_t pos, const format::Record& r) {
  std::vector<uint8_t> bytes(sb_.record_size, 0xFF);
  const auto enc = format::encode(r);
  std::copy(enc.begin(), enc.end(), bytes.begin());
  BlockState& st = blocks_[j];
  st.next_free = std::max(st.next_free, pos + 1);  // the position is spent even if the program fails half-way
  AISRV_TRY(dev_->program(position_offset(j, pos), bytes));
  ++st.valid;
  return ok();
}

Status Journal::compact() {
  const int active = active_block();
  // Prefer the block that is not active; erase a block only if the other one holds every newest record.
  int target = -1;
  for (int j : {active < 0 ? 1 : 1 - active, active < 0 ? 0 : active})
    if (safe_to_erase(j)) {
      target = j;
      break;
    }
  if (target < 0)
    return make_error(Errc::flash_error,
                      "catalogue journal cannot be compacted safely: neither journal block holds every client's "
                      "newest record (damaged journal; back up the models and reformat)");
  BlockState& st = blocks_[target];
  for (auto& n : newest_)
    if (n) n->in_block[target] = false;
  st.header.reset();
  st.next_free = st.capacity;  // unknown until the erase succeeded
  st.valid = st.garbage = 0;
  auto blank = dev_->is_erased(sb_.block_offset(st.block), sb_.erase_block);
  if (!blank) return blank.error();
  if (!*blank) AISRV_TRY(dev_->erase(sb_.block_offset(st.block), sb_.erase_block));
  st.next_free = 0;
  uint32_t pos = 0;
  for (auto& n : newest_) {
    if (!n) continue;
    AISRV_TRY(program_record(target, pos++, n->record));
    n->in_block[target] = true;
  }
  AISRV_TRY(dev_->sync());
  std::vector<uint8_t> head(sb_.journal_header_size, 0xFF);
  const format::JournalHeader h{max_generation_ + 1, st.block};
  const auto enc = format::encode(h);
  std::copy(enc.begin(), enc.end(), head.begin());
  AISRV_TRY(dev_->program(sb_.block_offset(st.block), head));
  AISRV_TRY(dev_->sync());
  st.header = h;
  max_generation_ = h.generation;
  ++compactions_;
  return ok();
}

Status Journal::append(const format::Record& r) {
  if (r.client >= newest_.size() || r.seq != next_seq())
    return make_error(Errc::internal, "journal append: record client {} seq {} (expected seq {})", r.client, r.seq,
                      next_seq());
  int a = active_block();
  if (a < 0 || blocks_[a].next_free >= blocks_[a].capacity) {
    AISRV_TRY(compact());
    a = active_block();
  }
  const uint32_t pos = blocks_[a].next_free;
  max_seq_ = r.seq;  // spent even if the program fails: a torn record must never share a seq with a later one
  AISRV_TRY(program_record(a, pos, r));
  AISRV_TRY(dev_->sync());
  auto& n = newest_[r.client];
  n = Newest{r, {}};
  n->in_block[a] = true;
  return ok();
}

}  // namespace aisrv::flash::detail
