// aisrv phy/usb (private) — DeviceEndpoints on the FunctionFS endpoint files (ep1 = bulk OUT, ep2 = bulk IN) with
// blocking read()/write() on large buffers. Facts this relies on (drivers/usb/gadget/function/f_fs.c):
//   - a read completes when its buffer is full or a short packet (or zero-length packet) arrived;
//   - a write of 0 bytes queues a zero-length packet; FunctionFS never adds one by itself;
//   - I/O against the endpoint's direction (read on IN, write on OUT) halts the endpoint (-EBADMSG = halted);
//   - with O_NONBLOCK, I/O on a disabled endpoint fails with -EAGAIN instead of waiting for the host;
//   - disabling the interface (bus reset, unplug) ends a pending read/write with -ESHUTDOWN;
//   - a signal interrupts a pending read/write: f_fs dequeues the request and returns -EINTR;
//   - each request goes through a kernel buffer of its size (kmalloc'd unless the UDC does scatter-gather).
// Reads block: f_fs completes AIO requests through a workqueue, a thread hand-off per request (measured 10-40 ms per
// completion in the QEMU test guest), while a blocking read is woken directly by the request's completion. abort()
// interrupts a blocking read with a thread-directed signal (CallInterrupter). Writes use Linux AIO without waiting:
// f_fs copies the data into its own buffer when the request is submitted, so an answer's status, payload and
// zero-length packet are queued at once and the session goes on to read the next command; completions are collected
// later.
#pragma once

#include <linux/aio_abi.h>

#include <atomic>
#include <array>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "aisrv/phy/usb_device_endpoints.hpp"
#include "call_interrupter.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::phy::usb {

class FunctionFsEndpoints final : public DeviceEndpoints {
 public:
  // Opens ep1/ep2 under the FunctionFS mount `dir` (after the descriptors were written to ep0). `interrupt_signal`
  // is the signal abort() sends to the I/O thread; a handler that does nothing is installed for it (no SA_RESTART).
  static Result<std::unique_ptr<FunctionFsEndpoints>> open(const std::string& dir, int interrupt_signal);
  ~FunctionFsEndpoints() override;

  // From the control thread (ep0 events):
  void on_enable();   // reads the endpoint's max packet size for the current speed and wakes wait_enabled()
  void on_disable();  // stops waiting for I/O that will not complete
  void close();       // wait_enabled() returns false from now on; I/O in progress ends

  bool wait_enabled() override;
  size_t max_packet() const override { return mps_.load(); }
  IoResult receive(ReceiveParts parts) override;
  IoResult send(std::span<const uint8_t> head, std::span<const uint8_t> tail = {}) override;
  IoResult flush() override;  // reports a failed write that came to light; does not wait for the host
  IoResult halt() override;
  void abort() override;
  void rearm() override;

  // Bytes per read()/write(): a 1 MiB payload with its trailer and terminating packet in one request (a multiple
  // of every packet size); smaller requests after a kernel allocation failure.
  static constexpr size_t kChunk = (1u << 20) + 4096;
  static constexpr size_t kSmallChunk = 256u << 10;
  static constexpr size_t kMaxReceiveParts = 4;
  // Bytes per write request: the first is on the bus while f_fs copies the next (a multiple of every packet size).
  static constexpr size_t kWritePiece = 256u << 10;

 private:
  struct Write {
    iocb cb{};
    bool in_flight = false;
    bool done = false;
    int64_t res = 0;
    size_t length = 0;
    uint64_t epoch = 0;  // the command it belongs to (rearm() starts a new one)
  };
  static constexpr size_t kWrites = 32;  // writes in flight (an answer takes up to 3 plus one per piece)

  FunctionFsEndpoints(int out_fd, int in_fd, std::unique_ptr<CallInterrupter> interrupter, aio_context_t ctx);
  // Collects write completions (waiting for at least one when `wait`); the first failure is kept in write_error_.
  void reap(bool wait);
  // Waits until no write is in flight (cancelling them after `patience`).
  void settle_writes(std::chrono::milliseconds patience);
  // Cancels the queued writes and flushes the UDC's FIFOs: they belong to the dropped command.
  void drop_queued();
  IoResult classify(int err, const char* what);

  int out_fd_;
  int in_fd_;
  std::unique_ptr<CallInterrupter> interrupter_;  // ends the blocking read on abort()
  aio_context_t ctx_;
  std::array<Write, kWrites> writes_{};
  std::deque<Write*> write_fifo_;  // in submission order
  IoResult write_error_;
  uint64_t epoch_ = 0;
  std::atomic<size_t> mps_{0};
  size_t chunk_ = kChunk;

  std::mutex mu_;
  std::condition_variable cv_;
  bool enabled_ = false;
  bool closed_ = false;
};

}  // namespace aisrv::phy::usb
