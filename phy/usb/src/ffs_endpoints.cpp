// aisrv phy/usb — FunctionFS bulk endpoints over Linux AIO (io_setup/io_submit/io_getevents/io_cancel).
#include "ffs_endpoints.hpp"

#include <endian.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace

Result<std::unique_ptr<FunctionFsEndpoints>> FunctionFsEndpoints::open(const std::string& dir) {
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
  if (sys_io_setup(2 * kDepth + 2, &ctx) < 0) {
    const int e = errno;
    ::close(out_fd);
    ::close(in_fd);
    return make_error(Errc::io_error, "io_setup failed: {}", std::strerror(e));
  }
  return std::unique_ptr<FunctionFsEndpoints>(new FunctionFsEndpoints(out_fd, in_fd, ctx));
}

FunctionFsEndpoints::FunctionFsEndpoints(int out_fd, int in_fd, aio_context_t ctx)
    : out_fd_(out_fd), in_fd_(in_fd), ctx_(ctx) {}

FunctionFsEndpoints::~FunctionFsEndpoints() {
  close();
  // Requests still in the kernel are cancelled by io_destroy, which waits for them.
  sys_io_destroy(ctx_);
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
  std::lock_guard lock(mu_);
  enabled_ = false;
  for (auto* slots : {&out_, &in_})
    for (auto& r : *slots)
      if (r.in_flight && !r.done) {
        io_event ev{};
        sys_io_cancel(ctx_, &r.cb, &ev);
      }
}

void FunctionFsEndpoints::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  abort();
  cv_.notify_all();
}

bool FunctionFsEndpoints::wait_enabled() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return enabled_ || closed_; });
  return !closed_;
}

void FunctionFsEndpoints::abort() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  for (auto* slots : {&out_, &in_})
    for (auto& r : *slots)
      if (r.in_flight && !r.done) {
        io_event ev{};
        sys_io_cancel(ctx_, &r.cb, &ev);  // -EINPROGRESS: the completion arrives through the ring
      }
  // Data a UDC already holds in its FIFOs belongs to the dropped command (no-op on dummy_hcd).
  ioctl(out_fd_, FUNCTIONFS_FIFO_FLUSH);
  ioctl(in_fd_, FUNCTIONFS_FIFO_FLUSH);
}

void FunctionFsEndpoints::rearm() {
  std::lock_guard lock(mu_);
  if (!closed_) aborted_ = false;
}

int FunctionFsEndpoints::submit(Request& r, int fd, uint16_t opcode, const void* data, size_t length) {
  std::lock_guard lock(mu_);
  if (closed_) return ESHUTDOWN;
  if (aborted_) return ECANCELED;
  r.cb = iocb{};
  r.cb.aio_data = reinterpret_cast<uint64_t>(&r);
  r.cb.aio_lio_opcode = opcode;
  r.cb.aio_fildes = static_cast<uint32_t>(fd);
  r.cb.aio_buf = reinterpret_cast<uint64_t>(data);
  r.cb.aio_nbytes = length;
  r.length = length;
  r.done = false;
  r.res = 0;
  iocb* list[1] = {&r.cb};
  if (sys_io_submit(ctx_, 1, list) != 1) return errno ? errno : EIO;
  r.in_flight = true;
  return 0;
}

FunctionFsEndpoints::Request* FunctionFsEndpoints::free_slot(Slots& slots) {
  for (auto& r : slots)
    if (!r.in_flight) return &r;
  return nullptr;
}

void FunctionFsEndpoints::reap() {
  io_event events[2 * kDepth];
  int n;
  do {
    n = sys_io_getevents(ctx_, 1, 2 * kDepth, events, nullptr);
  } while (n < 0 && errno == EINTR);
  std::lock_guard lock(mu_);
  for (int i = 0; i < n; ++i) {
    auto* r = reinterpret_cast<Request*>(events[i].data);
    r->res = events[i].res;
    r->done = true;
  }
}

void FunctionFsEndpoints::drain(std::deque<Request*>& fifo) {
  {
    std::lock_guard lock(mu_);
    for (Request* r : fifo)
      if (!r->done) {
        io_event ev{};
        sys_io_cancel(ctx_, &r->cb, &ev);
      }
  }
  while (!fifo.empty()) {
    if (!fifo.front()->done) {
      reap();
      continue;
    }
    std::lock_guard lock(mu_);
    fifo.front()->in_flight = false;
    fifo.pop_front();
  }
}

IoResult FunctionFsEndpoints::classify(int64_t err, const char* what) {
  IoResult r;
  bool aborted, closed;
  {
    std::lock_guard lock(mu_);
    aborted = aborted_;
    closed = closed_;
  }
  if (closed) {
    r.io = Io::disabled;  // the endpoints are closed for good: the serving loop ends
  } else if (aborted) {
    r.io = Io::cancelled;
  } else if (err == ESHUTDOWN || err == EAGAIN || err == ENODEV || err == ECONNRESET || err == ECANCELED) {
    r.io = Io::disabled;  // the interface went away (disabled, bus reset, unbound) under this request
  } else {
    r.io = Io::failed;
  }
  r.detail = fmt::format("{}: {}", what, std::strerror(static_cast<int>(err)));
  return r;
}

IoResult FunctionFsEndpoints::receive(std::span<uint8_t> buffer, const OnData& on_data) {
  std::deque<Request*> fifo;
  IoResult result;
  size_t next = 0, total = 0;
  bool stop = false;
  auto submit_more = [&] {
    while (!stop && fifo.size() < kDepth && next < buffer.size()) {
      Request* r = free_slot(out_);
      const size_t len = std::min(kPiece, buffer.size() - next);
      if (const int err = submit(*r, out_fd_, IOCB_CMD_PREAD, buffer.data() + next, len)) {
        result = classify(err, "read ep1");
        stop = true;
        return;
      }
      r->offset = next;
      fifo.push_back(r);
      next += len;
    }
  };
  submit_more();
  while (!fifo.empty()) {
    if (!fifo.front()->done) {
      reap();
      continue;
    }
    Request* r = fifo.front();
    fifo.pop_front();
    {
      std::lock_guard lock(mu_);
      r->in_flight = false;
    }
    if (r->res < 0) {
      result = classify(-r->res, "read ep1");
      stop = true;
    } else {
      const auto got = static_cast<size_t>(r->res);
      total += got;
      if (on_data && got > 0) on_data(std::span<const uint8_t>(buffer.data() + r->offset, got));
      if (got < r->length) {
        result.ended = true;  // a short packet or a zero-length packet ended the transfer
        stop = true;
      }
    }
    if (stop) {
      drain(fifo);
      break;
    }
    submit_more();
  }
  result.bytes = total;
  return result;
}

IoResult FunctionFsEndpoints::send(std::span<const uint8_t> data) {
  size_t off = 0;
  do {
    // Reap completed requests in order until a slot is free.
    while (true) {
      while (!in_fifo_.empty() && in_fifo_.front()->done) {
        Request* r = in_fifo_.front();
        in_fifo_.pop_front();
        {
          std::lock_guard lock(mu_);
          r->in_flight = false;
        }
        if (r->res != static_cast<int64_t>(r->length)) {
          IoResult e = r->res < 0 ? classify(-r->res, "write ep2")
                                  : IoResult{Io::failed, 0, false,
                                             fmt::format("write ep2: {} of {} bytes sent", r->res, r->length)};
          drain(in_fifo_);
          return e;
        }
      }
      if (in_fifo_.size() < kDepth) break;
      reap();
    }
    Request* r = free_slot(in_);
    const size_t len = std::min(kPiece, data.size() - off);
    if (const int err = submit(*r, in_fd_, IOCB_CMD_PWRITE, data.data() + off, len)) {
      IoResult e = classify(err, "write ep2");
      drain(in_fifo_);
      return e;
    }
    in_fifo_.push_back(r);
    off += len;
  } while (off < data.size());
  return IoResult{Io::ok, data.size(), false, {}};
}

IoResult FunctionFsEndpoints::flush() {
  while (!in_fifo_.empty()) {
    if (!in_fifo_.front()->done) {
      reap();
      continue;
    }
    Request* r = in_fifo_.front();
    in_fifo_.pop_front();
    {
      std::lock_guard lock(mu_);
      r->in_flight = false;
    }
    if (r->res != static_cast<int64_t>(r->length)) {
      IoResult e = r->res < 0 ? classify(-r->res, "write ep2")
                              : IoResult{Io::failed, 0, false,
                                         fmt::format("write ep2: {} of {} bytes sent", r->res, r->length)};
      drain(in_fifo_);
      return e;
    }
  }
  return {};
}

IoResult FunctionFsEndpoints::halt() {
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
