// aisrv host — libusb endpoints: synchronous small OUT transfers, pipelined asynchronous large ones, IN transfers
// queued while the data keeps coming, deadlines and cross-thread cancel.
#include "libusb_endpoints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "aisrv/protocol/usb_link.hpp"

namespace aisrv::client::usb {

namespace {

constexpr auto kControlTimeout = std::chrono::milliseconds(3000);
constexpr auto kDrainLimit = std::chrono::seconds(3);

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

unsigned ms_until(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<unsigned>(std::clamp<long long>(left.count(), 1, 24LL * 3600 * 1000));
}

}  // namespace

LibusbEndpoints::LibusbEndpoints(libusb_context* ctx, libusb_device_handle* handle, uint8_t interface,
                                 uint8_t ep_out, uint8_t ep_in, size_t max_packet)
    : ctx_(ctx), handle_(handle), interface_(interface), ep_out_(ep_out), ep_in_(ep_in), mps_(max_packet) {
  for (auto* slots : {&out_, &in_})
    for (auto& s : *slots) {
      s.transfer = libusb_alloc_transfer(0);
      s.owner = this;
    }
  for (auto& s : in_) {
    // usbfs-mapped memory saves the kernel a copy where the host controller supports it.
    s.buffer = libusb_dev_mem_alloc(handle_, kPiece);
    s.dev_mem = s.buffer != nullptr;
    if (!s.buffer) s.buffer = static_cast<uint8_t*>(std::malloc(kPiece));
  }
}

LibusbEndpoints::~LibusbEndpoints() {
  cancel_all();
  std::deque<Slot*> all;
  for (auto* slots : {&out_, &in_})
    for (auto& s : *slots)
      if (s.busy) all.push_back(&s);
  drain(all);
  for (auto* slots : {&out_, &in_})
    for (auto& s : *slots) {
      if (s.busy) continue;  // still owned by libusb after a failed drain: leak rather than crash
      libusb_free_transfer(s.transfer);
    }
  for (auto& s : in_) {
    if (s.busy) continue;
    if (s.dev_mem) libusb_dev_mem_free(handle_, s.buffer, kPiece);
    else std::free(s.buffer);
  }
}

void LIBUSB_CALL LibusbEndpoints::on_complete(libusb_transfer* t) {
  auto* s = static_cast<Slot*>(t->user_data);
  std::lock_guard lock(s->owner->mu_);
  s->done = true;
}

int LibusbEndpoints::submit(Slot& s) {
  {
    std::lock_guard lock(mu_);
    s.busy = true;
    s.done = false;
  }
  const int rc = libusb_submit_transfer(s.transfer);
  if (rc != 0) {
    std::lock_guard lock(mu_);
    s.busy = false;
  }
  return rc;
}

void LibusbEndpoints::cancel_all() {
  std::lock_guard lock(mu_);
  for (auto* slots : {&out_, &in_})
    for (auto& s : *slots)
      if (s.busy && !s.done) libusb_cancel_transfer(s.transfer);
}

void LibusbEndpoints::cancel() {
  cancel_.store(true);
  cancel_all();
  libusb_interrupt_event_handler(ctx_);
}

void LibusbEndpoints::wait(Slot& s, Deadline deadline) {
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (s.done) return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline && !timed_out_) {
      timed_out_ = true;
      cancel_all();
    }
    auto slice = std::chrono::milliseconds(100);
    if (!timed_out_) slice = std::min(slice, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                                                 std::chrono::milliseconds(1));
    timeval tv{static_cast<time_t>(slice.count() / 1000), static_cast<suseconds_t>(slice.count() % 1000 * 1000)};
    libusb_handle_events_timeout_completed(ctx_, &tv, nullptr);
  }
}

bool LibusbEndpoints::drain(std::deque<Slot*>& fifo) {
  {
    std::lock_guard lock(mu_);
    for (Slot* s : fifo)
      if (s->busy && !s->done) libusb_cancel_transfer(s->transfer);
  }
  const Deadline limit = std::chrono::steady_clock::now() + kDrainLimit;
  bool complete = true;
  while (!fifo.empty()) {
    Slot* s = fifo.front();
    bool done;
    {
      std::lock_guard lock(mu_);
      done = s->done || !s->busy;
    }
    if (!done) {
      if (std::chrono::steady_clock::now() > limit) return false;  // the transfer stays busy; the slot is not reused
      timeval tv{0, 50000};
      libusb_handle_events_timeout_completed(ctx_, &tv, nullptr);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      s->busy = false;
    }
    // A cancel that came after the transfer had finished on the bus leaves it COMPLETED: its data was delivered.
    const libusb_transfer* t = s->transfer;
    complete = complete && t->status == LIBUSB_TRANSFER_COMPLETED && t->actual_length == t->length;
    fifo.pop_front();
  }
  return complete;
}

IoResult LibusbEndpoints::from_error(int err, const char* what) {
  IoResult r;
  switch (err) {
    case LIBUSB_ERROR_PIPE: r.io = Io::stalled; break;
    case LIBUSB_ERROR_NO_DEVICE: r.io = Io::gone; break;
    case LIBUSB_ERROR_TIMEOUT: r.io = Io::timeout; break;
    case LIBUSB_ERROR_INTERRUPTED: r.io = Io::cancelled; break;
    default: r.io = Io::failed; break;
  }
  r.detail = fmt::format("{}: {}", what, libusb_error_name(err));
  return r;
}

IoResult LibusbEndpoints::result_of(const Slot& s, bool out) {
  const libusb_transfer* t = s.transfer;
  IoResult r;
  r.bytes = static_cast<size_t>(t->actual_length);
  const char* what = out ? "bulk OUT" : "bulk IN";
  switch (t->status) {
    case LIBUSB_TRANSFER_COMPLETED:
      if (out && t->actual_length != t->length) {
        r.io = Io::failed;
        r.detail = fmt::format("{}: {} of {} bytes sent", what, t->actual_length, t->length);
      }
      return r;
    case LIBUSB_TRANSFER_STALL: r.io = Io::stalled; break;
    case LIBUSB_TRANSFER_NO_DEVICE: r.io = Io::gone; break;
    case LIBUSB_TRANSFER_TIMED_OUT: r.io = Io::timeout; break;
    case LIBUSB_TRANSFER_CANCELLED:
      r.io = timed_out_ ? Io::timeout : cancel_.load() ? Io::cancelled : Io::failed;
      break;
    case LIBUSB_TRANSFER_OVERFLOW:
      r.io = Io::failed;
      r.detail = fmt::format("{}: the device sent more than the transfer could hold", what);
      return r;
    default: r.io = Io::failed; break;
  }
  r.detail = fmt::format("{}: transfer status {}", what, static_cast<int>(t->status));
  return r;
}

IoResult LibusbEndpoints::fail(IoResult r) {
  cancel_all();
  r.data_sent = drain(out_fifo_);
  drain(in_fifo_);
  ahead_ = 0;
  return r;
}

LibusbEndpoints::Slot* LibusbEndpoints::free_slot(Slots& slots) {
  for (auto& s : slots)
    if (!s.busy) return &s;
  return nullptr;
}

int LibusbEndpoints::submit_in(uint64_t generation, size_t length) {
  Slot* s = free_slot(in_);
  if (!s) return LIBUSB_ERROR_BUSY;
  s->generation = generation;
  libusb_fill_bulk_transfer(s->transfer, handle_, ep_in_, s->buffer, static_cast<int>(length), on_complete, s, 0);
  if (const int rc = submit(*s); rc != 0) return rc;
  in_fifo_.push_back(s);
  return 0;
}

IoResult LibusbEndpoints::sync_out(std::span<const uint8_t> data, Deadline deadline) {
  if (cancel_.load()) return fail(IoResult{Io::cancelled, 0, false, "cancelled"});
  int done = 0;
  const int rc = libusb_bulk_transfer(handle_, ep_out_, const_cast<uint8_t*>(data.data()),
                                      static_cast<int>(data.size()), &done, ms_until(deadline));
  if (rc != 0) return fail(from_error(rc, "bulk OUT"));
  if (static_cast<size_t>(done) != data.size())
    return fail(IoResult{Io::failed, static_cast<size_t>(done), false,
                         fmt::format("bulk OUT: {} of {} bytes sent", done, data.size())});
  return IoResult{Io::ok, data.size(), false, {}};
}

IoResult LibusbEndpoints::send(std::span<const uint8_t> data, Deadline deadline, size_t following) {
  if (out_fifo_.empty() && data.size() + following <= kSyncMax) return sync_out(data, deadline);
  size_t off = 0;
  do {
    // Reap finished transfers in order; wait for the oldest when all slots are in flight.
    while (true) {
      while (!out_fifo_.empty()) {
        Slot* head = out_fifo_.front();
        {
          std::lock_guard lock(mu_);
          if (!head->done) break;
          head->busy = false;
        }
        out_fifo_.pop_front();
        if (IoResult r = result_of(*head, true); !r.ok()) return fail(r);
      }
      if (out_fifo_.size() < kDepth) break;
      wait(*out_fifo_.front(), deadline);
    }
    if (cancel_.load()) return fail(IoResult{Io::cancelled, 0, false, "cancelled"});
    Slot* s = free_slot(out_);
    const size_t len = std::min(kPiece, data.size() - off);
    libusb_fill_bulk_transfer(s->transfer, handle_, ep_out_, const_cast<uint8_t*>(data.data() + off),
                              static_cast<int>(len), on_complete, s, 0);
    if (const int rc = submit(*s); rc != 0) return fail(from_error(rc, "bulk OUT submit"));
    out_fifo_.push_back(s);
    off += len;
  } while (off < data.size());
  return IoResult{Io::ok, data.size(), false, {}};
}

IoResult LibusbEndpoints::flush(Deadline deadline) {
  while (!out_fifo_.empty()) {
    Slot* head = out_fifo_.front();
    wait(*head, deadline);
    {
      std::lock_guard lock(mu_);
      head->busy = false;
    }
    out_fifo_.pop_front();
    if (IoResult r = result_of(*head, true); !r.ok()) return fail(r);
  }
  return {};
}

IoResult LibusbEndpoints::receive(size_t limit, const OnData& on_data, Deadline deadline, size_t read_ahead) {
  if (cancel_.load()) return fail(IoResult{Io::cancelled, 0, false, "cancelled"});
  const uint64_t gen = generation_;
  const size_t cap = round_up(limit, mps_) + mps_;  // room for the packet that ends a transfer of `limit` bytes
  size_t requested = ahead_, total = 0;            // reads queued ahead for this transfer by the previous call
  const size_t expected = requested;
  ahead_ = 0;
  if (requested == 0) {
    const size_t len = std::min(kPiece, round_up(limit, mps_));
    if (const int rc = submit_in(gen, len); rc != 0) return fail(from_error(rc, "bulk IN submit"));
    requested = len;
  }
  // Reads for the next transfer (a GET's payload behind its status), queued behind this one's.
  const size_t want = read_ahead ? std::min(round_up(read_ahead, mps_), kPiece * (kDepth - 1)) : 0;
  while (ahead_ < want && in_fifo_.size() < kDepth) {
    const size_t len = std::min(kPiece, want - ahead_);
    if (const int rc = submit_in(gen + 1, len); rc != 0) return fail(from_error(rc, "bulk IN submit"));
    ahead_ += len;
  }
  IoResult result;
  while (true) {
    Slot* head = in_fifo_.front();
    wait(*head, deadline);
    {
      std::lock_guard lock(mu_);
      head->busy = false;
    }
    in_fifo_.pop_front();
    if (IoResult r = result_of(*head, false); !r.ok()) return fail(r);
    const auto got = static_cast<size_t>(head->transfer->actual_length);
    total += got;
    if (on_data && got > 0) on_data(std::span<const uint8_t>(head->buffer, got));
    if (got < static_cast<size_t>(head->transfer->length)) {
      // A short packet or zero-length packet ended the transfer: drop this transfer's other reads, keep the
      // reads queued ahead for the next one (they are behind them, in order).
      std::deque<Slot*> rest;
      while (!in_fifo_.empty() && in_fifo_.front()->generation == gen) {
        rest.push_back(in_fifo_.front());
        in_fifo_.pop_front();
      }
      drain(rest);
      result.ended = true;
      break;
    }
    if (total > limit) return fail(IoResult{Io::ok, total, false, {}});  // too long: the caller resets the link
    const bool this_one_next = !in_fifo_.empty() && in_fifo_.front()->generation == gen;
    if (!this_one_next && ahead_ > 0)  // the next transfer's reads would take this one's data
      return fail(IoResult{Io::ok, total, false, {}});
    // The transfer goes on: keep reads queued so the device never waits for the next one — beyond what was read
    // ahead for it (the size of the last answer) only once the data reached the end of those reads.
    if (total < expected) continue;
    while (ahead_ == 0 && in_fifo_.size() < kDepth && requested < cap) {
      const size_t len = std::min({kPiece, cap - requested});
      if (const int rc = submit_in(gen, len); rc != 0) return fail(from_error(rc, "bulk IN submit"));
      requested += len;
    }
  }
  generation_ = gen + 1;
  result.bytes = total;
  return result;
}

IoResult LibusbEndpoints::clear_halts() {
  for (uint8_t ep : {ep_in_, ep_out_}) {
    const int rc = libusb_clear_halt(handle_, ep);
    if (rc != 0) return from_error(rc, "clear halt");
  }
  return {};
}

IoResult LibusbEndpoints::control_in(uint8_t request, uint16_t length, std::vector<uint8_t>& answer) {
  answer.resize(length);
  const int rc = libusb_control_transfer(handle_, protocol::usb::kRequestTypeVendorInterfaceIn, request, 0, interface_, answer.data(), length,
                                         static_cast<unsigned>(kControlTimeout.count()));
  if (rc < 0) {
    answer.clear();
    return from_error(rc, "control request");
  }
  answer.resize(static_cast<size_t>(rc));
  return IoResult{Io::ok, static_cast<size_t>(rc), true, {}};
}

IoResult LibusbEndpoints::control_out(uint8_t request, uint16_t value) {
  const int rc = libusb_control_transfer(handle_, protocol::usb::kRequestTypeVendorInterfaceOut, request, value,
                                         interface_, nullptr, 0,
                                         static_cast<unsigned>(kControlTimeout.count()));
  if (rc < 0) return from_error(rc, "control request");
  return {};
}

}  // namespace aisrv::client::usb
