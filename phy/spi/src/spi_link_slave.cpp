// aisrv phy/spi — the slave end of the SPI link protocol: frame checks, transfer assembly, command hand-off and
// the reply prepared for the next transaction.
#include "aisrv/phy/spi_link_slave.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <random>

namespace aisrv::phy::spi {

struct LinkSlave::Pending {
  std::vector<uint8_t> payload;
  protocol::Request request;
  protocol::Response response;
  std::atomic<bool> done{false};
};

struct LinkSlave::Transfer {
  uint16_t xfer = 0;
  uint32_t cmd = 0;
  uint32_t engine = 0;
  uint32_t tensor = 0;
  uint32_t total = 0;
  uint32_t received = 0;
  Clock::time_point last;
  std::vector<uint8_t> buffer;       // the request payload while it arrives
  std::shared_ptr<Pending> pending;  // set once the request is complete

  bool receiving() const { return !pending; }
  bool same_request(const aisrv_spi_request_t& r) const {
    return r.xfer == xfer && r.cmd == cmd && r.engine == engine && r.tensor == tensor && r.total == total;
  }
};

namespace {
uint32_t random_boot() {
  std::random_device rd;
  uint32_t v = 0;
  while (v == 0) v = rd();
  return v;
}
}  // namespace

LinkSlave::LinkSlave(LinkSlaveOptions options, Executor execute, LogSink log)
    : options_(options), execute_(std::move(execute)), log_(std::move(log)),
      boot_(options.boot ? options.boot : random_boot()) {
  options_.max_frame = std::clamp<uint16_t>(options_.max_frame, AISRV_SPI_MIN_FRAME, AISRV_SPI_MAX_FRAME);
  reply_.resize(options_.max_frame);
  build_reply(0, AISRV_SPI_E_NONE, 0, 0);
}

LinkSlave::~LinkSlave() = default;

size_t LinkSlave::in_flight() const {
  return static_cast<size_t>(std::count_if(running_.begin(), running_.end(), [](const auto& p) {
    return !p->done.load(std::memory_order_acquire);
  }));
}

void LinkSlave::on_transaction(std::span<const uint8_t> rx, size_t clocked, Clock::time_point now) {
  if (clocked == 0) return;  // CS toggled without clocks: nothing was exchanged
  ++stats_.transactions;
  stats_.bytes += clocked;
  on_idle(now);  // a transfer that timed out is gone before this frame is looked at

  const size_t avail = std::min(rx.size(), clocked);
  const uint8_t seq = avail > 2 ? rx[2] : 0;
  aisrv_spi_request_t req{};
  const uint8_t* payload = nullptr;
  aisrv_spi_error_t error = AISRV_SPI_E_NONE;
  uint32_t answer_offset = 0;
  if (options_.fixed && clocked != options_.max_frame) {
    error = AISRV_SPI_E_WRONG_SIZE;
  } else {
    error = aisrv_spi_parse_request(rx.data(), avail, aisrv_spi_chunk_size(options_.max_frame), &req, &payload);
  }
  if (error == AISRV_SPI_E_NONE && last_frame_seq_ == req.seq) {
    // A master never sends two frames in a row with the same seq: this is the previous frame again, which a
    // target controller hands back when the master clocked nothing (its receive buffer still holds the last
    // message). Ignore it; the armed reply stays valid.
    ++stats_.replays;
    return;
  }
  if (error == AISRV_SPI_E_NONE) last_frame_seq_ = req.seq;
  if (error == AISRV_SPI_E_NONE) error = handle(req, {payload, req.length}, now, answer_offset);
  if (error == AISRV_SPI_E_NONE) {
    ++stats_.accepted;
  } else {
    ++stats_.rejected;
    ++stats_.by_error[std::min<size_t>(error, stats_.by_error.size() - 1)];
    if (error == AISRV_SPI_E_BAD_CRC) ++stats_.crc_errors;
  }
  build_reply(seq, error, answer_offset, error == AISRV_SPI_E_NONE ? req.want : 0);
}

bool LinkSlave::on_idle(Clock::time_point now) {
  if (!transfer_ || !transfer_->receiving() || now - transfer_->last <= options_.transfer_timeout) return false;
  timed_out_xfer_ = transfer_->xfer;
  discard(fmt::format("no frame for {} ms", options_.transfer_timeout.count()).c_str());
  build_reply(last_seq_, AISRV_SPI_E_NONE, 0, 0);
  return true;
}

aisrv_spi_error_t LinkSlave::handle(const aisrv_spi_request_t& req, std::span<const uint8_t> payload,
                                    Clock::time_point now, uint32_t& answer_offset) {
  switch (req.type) {
    case AISRV_SPI_SYNC:
      if (req.total < AISRV_SPI_MIN_FRAME || (options_.fixed && req.total < options_.max_frame))
        return AISRV_SPI_E_BAD_FRAME_SIZE;
      if (transfer_ && transfer_->receiving()) discard("the master sent SYNC");
      transfer_.reset();
      timed_out_xfer_.reset();
      return AISRV_SPI_E_NONE;
    case AISRV_SPI_BEGIN:
      return begin(req, payload, now);
    case AISRV_SPI_DATA:
      return data(req, payload, now);
    case AISRV_SPI_POLL:
      if (req.xfer == 0) return req.want ? AISRV_SPI_E_NO_TRANSFER : AISRV_SPI_E_NONE;  // a plain status poll
      if (!transfer_ || transfer_->xfer != req.xfer)
        return timed_out_xfer_ == req.xfer ? AISRV_SPI_E_TIMEOUT : AISRV_SPI_E_NO_TRANSFER;
      transfer_->last = now;
      answer_offset = req.offset;
      return AISRV_SPI_E_NONE;
    default:
      return AISRV_SPI_E_BAD_TYPE;
  }
}

aisrv_spi_error_t LinkSlave::begin(const aisrv_spi_request_t& req, std::span<const uint8_t> payload,
                                   Clock::time_point now) {
  if (req.offset != 0 || req.length > req.total) return AISRV_SPI_E_BAD_OFFSET;
  if (transfer_ && transfer_->same_request(req)) {
    // The same BEGIN again (the master did not see our reply): never restart or re-run a command for it.
    transfer_->last = now;
    if (transfer_->receiving() && req.length > transfer_->received) return AISRV_SPI_E_BAD_OFFSET;
    return AISRV_SPI_E_NONE;
  }
  if (transfer_ && transfer_->receiving()) discard("a new transfer began");
  transfer_ = std::make_unique<Transfer>();
  timed_out_xfer_.reset();
  auto& t = *transfer_;
  t.xfer = req.xfer;
  t.cmd = req.cmd;
  t.engine = req.engine;
  t.tensor = req.tensor;
  t.total = req.total;
  t.last = now;
  if (req.total > options_.max_payload) {
    // Refused from the header alone: nothing is allocated, the command is answered at once.
    auto p = std::make_shared<Pending>();
    p->response.status = AISRV_STATUS_ERROR_BAD_LENGTH;
    p->done = true;
    t.pending = std::move(p);
    log_(fmt::format("SPI: {} (engine {}): request payload of {} bytes is above the limit of {} bytes",
                     protocol::command_name(req.cmd), req.engine, req.total, options_.max_payload));
    return AISRV_SPI_E_NONE;
  }
  t.buffer.assign(payload.begin(), payload.end());
  t.received = req.length;
  if (t.received == t.total) complete_request();
  return AISRV_SPI_E_NONE;
}

aisrv_spi_error_t LinkSlave::data(const aisrv_spi_request_t& req, std::span<const uint8_t> payload,
                                  Clock::time_point now) {
  if (!transfer_ || transfer_->xfer != req.xfer)
    return timed_out_xfer_ == req.xfer ? AISRV_SPI_E_TIMEOUT : AISRV_SPI_E_NO_TRANSFER;
  auto& t = *transfer_;
  if (!t.same_request(req)) return AISRV_SPI_E_MISMATCH;
  const uint64_t end = uint64_t{req.offset} + req.length;
  if (end > t.total) return AISRV_SPI_E_BAD_OFFSET;
  t.last = now;
  if (!t.receiving() || end <= t.received) return AISRV_SPI_E_NONE;  // a chunk we already have
  if (req.offset < t.received) return AISRV_SPI_E_BAD_OFFSET;       // overlaps the received part: not our chunking
  if (req.offset > t.received) return AISRV_SPI_E_GAP;
  t.buffer.insert(t.buffer.end(), payload.begin(), payload.end());
  t.received = static_cast<uint32_t>(end);
  if (t.received == t.total) complete_request();
  return AISRV_SPI_E_NONE;
}

void LinkSlave::complete_request() {
  auto& t = *transfer_;
  auto p = std::make_shared<Pending>();
  p->payload = std::move(t.buffer);
  p->request.header = protocol::Header{t.cmd, t.engine, t.tensor};
  p->request.payload = p->payload;
  p->request.donor = &p->payload;  // the interpreter may take the buffer instead of copying it (nobody reads it later)
  t.pending = p;
  std::erase_if(running_, [](const auto& r) { return r->done.load(std::memory_order_acquire); });
  running_.push_back(p);
  ++stats_.commands;
  execute_(p->request, p->response, [p] { p->done.store(true, std::memory_order_release); });
}

void LinkSlave::discard(const char* why) {
  const auto& t = *transfer_;
  ++stats_.discarded;
  log_(fmt::format("SPI: transfer {} ({}, engine {}) discarded after {} of {} bytes: {}; nothing of it was applied",
                   t.xfer, protocol::command_name(t.cmd), t.engine, t.received, t.total, why));
  transfer_.reset();
}

void LinkSlave::build_reply(uint8_t seq, aisrv_spi_error_t error, uint32_t answer_offset, uint16_t want) {
  last_seq_ = seq;
  aisrv_spi_reply_t r{};
  r.seq = seq;
  r.frame = options_.max_frame;
  r.boot = boot_;
  r.state = options_.fixed ? AISRV_SPI_STATE_FIXED : 0;
  const uint8_t* answer = nullptr;
  if (transfer_) {
    const auto& t = *transfer_;
    r.xfer = t.xfer;
    r.cmd = t.cmd;
    if (t.receiving()) {
      r.state |= AISRV_SPI_STATE_RECEIVING;
      r.total = t.total;
      r.offset = t.received;
    } else if (t.pending->done.load(std::memory_order_acquire)) {
      const auto& resp = t.pending->response;
      r.state |= AISRV_SPI_STATE_READY;
      r.status = resp.status;
      r.total = static_cast<uint32_t>(resp.payload.size());
      if (want && error == AISRV_SPI_E_NONE) {
        if (answer_offset > r.total) {
          error = AISRV_SPI_E_BAD_OFFSET;
          ++stats_.rejected;
          ++stats_.by_error[error];
          --stats_.accepted;
        } else {
          const uint32_t n = std::min<uint32_t>({want, r.total - answer_offset, aisrv_spi_chunk_size(r.frame)});
          r.offset = answer_offset;
          r.length = static_cast<uint16_t>(n);
          answer = resp.payload.data() + answer_offset;
        }
      }
    } else {
      r.state |= AISRV_SPI_STATE_BUSY;
      r.total = t.total;
      r.offset = t.total;
    }
  }
  r.error = static_cast<uint8_t>(error);
  if (error != AISRV_SPI_E_NONE) r.state |= AISRV_SPI_STATE_REJECTED;
  reply_len_ = aisrv_spi_build_reply(&r, answer, reply_.data());
}

}  // namespace aisrv::phy::spi
