// aisrv phy/usb — FunctionFS bulk endpoints: blocking readv() of large requests scattered over the caller's buffers,
// AIO writes collected later; a blocking read is interrupted by a thread-directed signal when the host resets the
// link or the device stops.
#include "ffs_endpoints.hpp"

#include <endian.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "aisrv/phy/ffs_descriptors.hpp"

namespace aisrv::phy::usb {

namespace {

int sys_io_setup(unsigned nr, aio_context_t* ctx) { return static_cast<int>(syscall(SYS_io_setup, nr, ctx)); }
int sys_io_destroy(aio_context_t ctx) { return static_cast<int>(syscall(SYS_io_destroy, ctx)); }
int sys_io_submit(aio_context_t ctx, long n, iocb** cbs) { return static_cast<int>(syscall(SYS_io_submit, ctx, n, cbs)); }
int sys_io_cancel(aio_context_t ctx, iocb* cb, io_event* ev) {
  return static_cast<int>(syscall(SYS_io_cancel, ctx, cb, ev));
}
int sys_io_getevents(aio_context_t ctx, long min_nr, long nr, io_event* events, timespec* timeout) {
  return static_cast<int>(syscall(SYS_io_getevents, ctx, min_nr, nr, events, timeout));
}

// How long abort() keeps interrupting the I/O thread before giving up (it normally takes one signal).
constexpr auto kAbortPatience = std::chrono::seconds(2);

}  // namespace

Result<std::unique_ptr<FunctionFsEndpoints>> FunctionFsEndpoints::open(const std::string& dir, int interrupt_signal) {
  auto interrupter = AISRV_TRY(CallInterrupter::create(interrupt_signal));
  const std::string out_path = dir + "/" + kFfsFileOut, in_path = dir + "/" + kFfsFileIn;
  const int out_fd = ::open(out_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (out_fd < 0) return make_error(Errc::io_error, "cannot open {}: {}", out_path, std::strerror(errno));
  const int in_fd = ::open(in_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (in_fd < 0) {
    const int e = errno;
    ::close(out_fd);
    return make_error(Errc::io_error, "cannot open {}: {}", in_path, std::strerror(e));
  }
  aio_context_t ctx = 0;
  if (sys_io_setup(2 * kWrites, &ctx) < 0) {
    const int e = errno;
    ::close(out_fd);
    ::close(in_fd);
    return make_error(Errc::io_error, "io_setup failed: {}", std::strerror(e));
  }
  return std::unique_ptr<FunctionFsEndpoints>(new FunctionFsEndpoints(out_fd, in_fd, std::move(interrupter), ctx));
}

FunctionFsEndpoints::FunctionFsEndpoints(int out_fd, int in_fd, std::unique_ptr<CallInterrupter> interrupter,
                                         aio_context_t ctx)
    : out_fd_(out_fd), in_fd_(in_fd), interrupter_(std::move(interrupter)), ctx_(ctx) {}

FunctionFsEndpoints::~FunctionFsEndpoints() {
  close();
  settle_writes(std::chrono::milliseconds(0));
  sys_io_destroy(ctx_);  // waits for what the kernel still holds
  ::close(out_fd_);
  ::close(in_fd_);
}

void FunctionFsEndpoints::on_enable() {
  usb_endpoint_descriptor desc{};
  size_t mps = 0;
  if (ioctl(in_fd_, FUNCTIONFS_ENDPOINT_DESC, &desc) == 0) mps = le16toh(desc.wMaxPacketSize) & 0x7FF;
  std::lock_guard lock(mu_);
  mps_.store(mps);
  enabled_ = mps != 0;
  cv_.notify_all();
}

void FunctionFsEndpoints::on_disable() {
  // A pending read/write ends with -ESHUTDOWN by itself when the interface is disabled.
  std::lock_guard lock(mu_);
  enabled_ = false;
}

void FunctionFsEndpoints::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  interrupter_->shut(kAbortPatience);
  drop_queued();
}

bool FunctionFsEndpoints::wait_enabled() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return enabled_ || closed_; });
  return !closed_;
}

void FunctionFsEndpoints::abort() {
  interrupter_->abort(kAbortPatience);  // marks the link reset and ends the blocking read in progress
  drop_queued();
}

void FunctionFsEndpoints::drop_queued() {
  std::lock_guard lock(mu_);
  // Data a UDC already holds in its FIFOs belongs to the dropped command (no-op on dummy_hcd).
  ioctl(out_fd_, FUNCTIONFS_FIFO_FLUSH);
  ioctl(in_fd_, FUNCTIONFS_FIFO_FLUSH);
  for (auto& w : writes_)  // queued answers are dropped (the completion arrives through the ring)
    if (w.in_flight && !w.done) {
      io_event ev{};
      sys_io_cancel(ctx_, &w.cb, &ev);
    }
}

void FunctionFsEndpoints::rearm() {
  reap(false);
  interrupter_->rearm();
  write_error_ = {};  // what is left in flight belongs to earlier commands
  ++epoch_;
}

void FunctionFsEndpoints::reap(bool wait) {
  if (write_fifo_.empty()) return;
  io_event events[kWrites];
  timespec zero{0, 0}, slice{0, 10 * 1000 * 1000};
  int n;
  do {
    n = sys_io_getevents(ctx_, wait ? 1 : 0, kWrites, events, wait ? &slice : &zero);
  } while (n < 0 && errno == EINTR);
  {
    std::lock_guard lock(mu_);
    for (int i = 0; i < n; ++i) {
      auto* w = reinterpret_cast<Write*>(events[i].data);
      w->res = events[i].res;
      w->done = true;
    }
  }
  while (!write_fifo_.empty() && write_fifo_.front()->done) {
    Write* w = write_fifo_.front();
    write_fifo_.pop_front();
    {
      std::lock_guard lock(mu_);
      w->in_flight = false;
    }
    if (w->res == -ENOMEM && chunk_ > kSmallChunk) chunk_ = kSmallChunk;  // no kernel buffer that large
    if (w->epoch == epoch_ && write_error_.ok() && w->res != static_cast<int64_t>(w->length))
      write_error_ = w->res < 0 ? classify(static_cast<int>(-w->res), "write ep2")
                                : IoResult{Io::failed, 0, false,
                                           fmt::format("write ep2: {} of {} bytes sent", w->res, w->length)};
  }
}

void FunctionFsEndpoints::settle_writes(std::chrono::milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (!write_fifo_.empty() && std::chrono::steady_clock::now() < until) reap(true);
  if (write_fifo_.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (Write* w : write_fifo_)
      if (!w->done) {
        io_event ev{};
        sys_io_cancel(ctx_, &w->cb, &ev);
      }
  }
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!write_fifo_.empty() && std::chrono::steady_clock::now() < limit) reap(true);
}

IoResult FunctionFsEndpoints::flush() {
  reap(false);
  IoResult r = write_error_;
  write_error_ = {};
  return r;
}

IoResult FunctionFsEndpoints::classify(int err, const char* what) {
  IoResult r;
  if (interrupter_->is_shut()) r.io = Io::disabled;
  else if (interrupter_->aborted()) r.io = Io::cancelled;
  else if (err == ESHUTDOWN || err == EAGAIN || err == ENODEV || err == ECONNRESET) r.io = Io::disabled;
  else r.io = Io::failed;
  r.detail = fmt::format("{}: {}", what, std::strerror(err));
  return r;
}

IoResult FunctionFsEndpoints::receive(ReceiveParts parts) {
  // One readv() per request of at most chunk_ bytes, its iovecs covering the parts' window [total, total + len).
  if (parts.size() > kMaxReceiveParts)
    return IoResult{Io::failed, 0, false, fmt::format("read ep1: {} receive parts (at most {})", parts.size(),
                                                      kMaxReceiveParts)};
  const size_t capacity = total_size(parts);
  size_t total = 0;
  size_t part = 0, part_off = 0;  // where `total` is inside the parts
  while (total < capacity) {
    const size_t len = std::min(chunk_, capacity - total);
    std::array<iovec, kMaxReceiveParts> iov{};
    size_t count = 0;
    for (size_t p = part, off = part_off, want = len; want > 0 && p < parts.size(); ++p, off = 0) {
      const size_t take = std::min(want, parts[p].size() - off);
      if (take == 0) continue;
      iov[count++] = {parts[p].data() + off, take};
      want -= take;
    }
    if (!interrupter_->begin()) {
      const bool shut = interrupter_->is_shut();
      return IoResult{shut ? Io::disabled : Io::cancelled, total, false, shut ? "endpoints closed" : "link reset"};
    }
    const ssize_t n = ::readv(out_fd_, iov.data(), static_cast<int>(count));
    const int err = errno;
    interrupter_->end();
    if (n < 0) {
      if (err == ENOMEM && chunk_ > kSmallChunk) {  // no contiguous kernel buffer that large: smaller requests
        chunk_ = kSmallChunk;
        continue;
      }
      if (err == EINTR && !interrupter_->aborted()) continue;  // a signal not meant to end this read: nothing read
      IoResult r = classify(err, "read ep1");
      r.bytes = total;
      return r;
    }
    const auto got = static_cast<size_t>(n);
    total += got;
    for (size_t left = got; left > 0 && part < parts.size();) {  // advance the cursor
      const size_t step = std::min(left, parts[part].size() - part_off);
      left -= step;
      part_off += step;
      if (part_off == parts[part].size()) ++part, part_off = 0;
    }
    while (part < parts.size() && part_off == parts[part].size()) ++part, part_off = 0;
    if (got < len) return IoResult{Io::ok, total, true, {}};  // a short packet or a zero-length packet
  }
  return IoResult{Io::ok, total, false, {}};
}

IoResult FunctionFsEndpoints::send(std::span<const uint8_t> head, std::span<const uint8_t> tail) {
  // One request per piece, queued without waiting (f_fs copies the data at submission, so the first piece is on the
  // bus while the next ones are copied); the last request carries the end of `head` and all of `tail` (gathered),
  // so a payload and its CRC trailer leave as one request. Every request but the last is a multiple of the packet
  // size.
  reap(false);
  const size_t piece = std::min(kWritePiece, chunk_);
  size_t off = 0;  // position in head
  while (true) {
    const size_t rest = head.size() - off + tail.size();
    const bool last = rest <= piece;
    iovec iov[2];
    int count = 0;
    size_t len = 0;
    if (last) {
      if (off < head.size()) iov[count++] = {const_cast<uint8_t*>(head.data() + off), head.size() - off};
      if (!tail.empty()) iov[count++] = {const_cast<uint8_t*>(tail.data()), tail.size()};
      len = rest;
    } else {
      len = std::max<size_t>(1, std::min(piece, head.size() - off) / mps_.load()) * mps_.load();
      iov[count++] = {const_cast<uint8_t*>(head.data() + off), len};
    }
    while (write_fifo_.size() == kWrites) reap(true);  // the host has not read the earlier ones yet
    Write* w = nullptr;
    for (auto& candidate : writes_)
      if (!candidate.in_flight) {
        w = &candidate;
        break;
      }
    {
      // Checked and submitted under mu_: abort() marks the link reset before drop_queued() takes mu_, so a write
      // either sees the mark or is cancelled with the others.
      std::lock_guard lock(mu_);
      if (interrupter_->is_shut()) return IoResult{Io::disabled, 0, false, "endpoints closed"};
      if (interrupter_->aborted()) return IoResult{Io::cancelled, 0, false, "link reset"};
      w->cb = iocb{};
      w->cb.aio_data = reinterpret_cast<uint64_t>(w);
      w->cb.aio_lio_opcode = IOCB_CMD_PWRITEV;
      w->cb.aio_fildes = static_cast<uint32_t>(in_fd_);
      w->cb.aio_buf = reinterpret_cast<uint64_t>(iov);
      w->cb.aio_nbytes = static_cast<uint64_t>(count);  // PWRITEV: number of iovecs (0: a zero-length packet)
      w->length = len;
      w->epoch = epoch_;
      w->done = false;
      w->res = 0;
      iocb* list[1] = {&w->cb};
      if (sys_io_submit(ctx_, 1, list) != 1) {
        const int err = errno;
        return IoResult{Io::failed, 0, false, fmt::format("write ep2: io_submit: {}", std::strerror(err))};
      }
      w->in_flight = true;
    }
    write_fifo_.push_back(w);
    if (last) break;
    off += len;
  }
  if (!write_error_.ok()) {
    IoResult r = write_error_;
    write_error_ = {};
    return r;
  }
  return IoResult{Io::ok, head.size() + tail.size(), false, {}};
}

IoResult FunctionFsEndpoints::halt() {
  // A UDC does not halt an IN endpoint with requests queued: let the host take (or the kernel drop) what is left.
  settle_writes(std::chrono::seconds(2));
  // FunctionFS halts an endpoint when it is used against its direction: write on OUT, read on IN (-EBADMSG).
  IoResult result;
  uint8_t dummy = 0;
  if (::write(out_fd_, &dummy, 0) >= 0 || errno != EBADMSG)
    result = IoResult{Io::failed, 0, false, fmt::format("halt ep1: {}", std::strerror(errno))};
  if (::read(in_fd_, &dummy, 0) >= 0 || errno != EBADMSG)
    result = IoResult{Io::failed, 0, false, fmt::format("halt ep2: {}", std::strerror(errno))};
  return result;
}

}  // namespace aisrv::phy::usb
