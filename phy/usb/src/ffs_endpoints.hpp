// aisrv phy/usb (private) — DeviceEndpoints on FunctionFS endpoint files (ep1 = bulk OUT, ep2 = bulk IN) with Linux
// native AIO: several requests in flight per direction so the bus never waits for the next read()/write(), and
// io_cancel for the host's link reset. Facts this relies on (drivers/usb/gadget/function/f_fs.c):
//   - a request completes when its buffer is full or a short packet (or zero-length packet) arrived;
//   - a write of 0 bytes queues a zero-length packet; FunctionFS never adds one by itself;
//   - I/O against the endpoint's direction (read on IN, write on OUT) halts the endpoint (-EBADMSG = halted);
//   - with O_NONBLOCK, I/O on a disabled endpoint fails with -EAGAIN instead of waiting for the host;
//   - disabling the interface (bus reset, unplug) completes pending requests with -ESHUTDOWN, io_cancel with
//     -ECONNRESET (usb_ep_dequeue);
//   - each request is copied through a kmalloc'd kernel buffer of its size: requests stay well below 4 MiB.
#pragma once

#include <linux/aio_abi.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "aisrv/phy/usb_device_endpoints.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::phy::usb {

class FunctionFsEndpoints final : public DeviceEndpoints {
 public:
  // Opens ep1/ep2 under the FunctionFS mount `dir` (after the descriptors were written to ep0).
  static Result<std::unique_ptr<FunctionFsEndpoints>> open(const std::string& dir);
  ~FunctionFsEndpoints() override;

  // From the control thread (ep0 events):
  void on_enable();   // reads the endpoint's max packet size for the current speed and wakes wait_enabled()
  void on_disable();  // ends I/O in flight
  void close();       // wait_enabled() returns false from now on

  bool wait_enabled() override;
  size_t max_packet() const override { return mps_.load(); }
  IoResult receive(std::span<uint8_t> buffer, const OnData& on_data) override;
  IoResult send(std::span<const uint8_t> data) override;
  IoResult flush() override;
  IoResult halt() override;
  void abort() override;
  void rearm() override;

  static constexpr size_t kPiece = 256u << 10;  // bytes per request
  static constexpr size_t kDepth = 4;           // requests in flight per direction

 private:
  struct Request {
    iocb cb{};
    size_t offset = 0;
    size_t length = 0;
    bool in_flight = false;
    bool done = false;
    int64_t res = 0;
  };
  using Slots = std::array<Request, kDepth>;

  FunctionFsEndpoints(int out_fd, int in_fd, aio_context_t ctx);
  // Queues one request; an errno value when it cannot be queued (ECANCELED after abort/close).
  int submit(Request& r, int fd, uint16_t opcode, const void* data, size_t length);
  Request* free_slot(Slots& slots);
  // Waits for at least one completion and marks it done.
  void reap();
  // Cancels every request of `fifo` and waits until all of them completed.
  void drain(std::deque<Request*>& fifo);
  IoResult classify(int64_t err, const char* what);

  int out_fd_;
  int in_fd_;
  aio_context_t ctx_;
  std::atomic<size_t> mps_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool enabled_ = false;
  bool closed_ = false;
  bool aborted_ = false;
  Slots out_{};
  Slots in_{};
  std::deque<Request*> in_fifo_;  // IN requests queued by send(), oldest first
};

}  // namespace aisrv::phy::usb
