// aisrv host (private) — HostEndpoints on libusb-1.0. A command with little or no payload goes out with libusb's
// synchronous bulk transfer; a larger one as several asynchronous transfers in flight (the command packet included),
// so the bus never waits for the host to submit the next part. IN transfers are asynchronous and may be queued
// ahead: the status read is queued while the OUT data is still in flight, a GET's payload reads are queued behind the
// status read. Deadlines are enforced here (transfers are cancelled when they pass); cancel() may be called from any
// thread. After any result other than ok, nothing is left in flight.
#pragma once

#include <libusb-1.0/libusb.h>

#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

#include "aisrv/client/usb_link.hpp"

namespace aisrv::client::usb {

class LibusbEndpoints final : public HostEndpoints {
 public:
  LibusbEndpoints(libusb_context* ctx, libusb_device_handle* handle, uint8_t interface, uint8_t ep_out,
                  uint8_t ep_in, size_t max_packet);
  ~LibusbEndpoints() override;
  LibusbEndpoints(const LibusbEndpoints&) = delete;
  LibusbEndpoints& operator=(const LibusbEndpoints&) = delete;

  size_t max_packet() const override { return mps_; }
  IoResult send(std::span<const uint8_t> data, Deadline deadline, size_t following) override;
  IoResult flush(Deadline deadline) override;
  IoResult receive(size_t limit, const OnData& on_data, Deadline deadline, size_t read_ahead) override;
  IoResult clear_halts() override;
  IoResult control_in(uint8_t request, uint16_t length, std::vector<uint8_t>& answer) override;
  IoResult control_out(uint8_t request, uint16_t value = 0) override;

  // Thread-safe: ends the transfers in flight with Io::cancelled. Cleared by begin().
  void cancel();
  // Start of a command: forget an earlier cancel() or timeout.
  void begin() {
    cancel_.store(false);
    timed_out_ = false;
  }

  static constexpr size_t kPiece = 256u << 10;   // bytes per asynchronous transfer
  static constexpr size_t kDepth = 6;            // transfers in flight per direction
  static constexpr size_t kSyncMax = 64u << 10;  // commands with at most this much OUT data go synchronously

 private:
  struct Slot {
    libusb_transfer* transfer = nullptr;
    uint8_t* buffer = nullptr;  // IN staging buffer (kPiece bytes)
    bool dev_mem = false;       // buffer comes from libusb_dev_mem_alloc
    bool busy = false;
    bool done = false;
    uint64_t generation = 0;    // IN: which transfer this read belongs to
    LibusbEndpoints* owner = nullptr;
  };
  using Slots = std::array<Slot, kDepth>;

  static void LIBUSB_CALL on_complete(libusb_transfer* t);
  int submit(Slot& s);
  Slot* free_slot(Slots& slots);
  // Handles libusb events until `s` completed; cancels everything in flight when the deadline passes.
  void wait(Slot& s, Deadline deadline);
  void cancel_all();
  // Cancels the given transfers and waits for their completion callbacks.
  // Waits for the transfers of `fifo` (cancelled first); true when every one of them completed in full.
  bool drain(std::deque<Slot*>& fifo);
  // After a failure: nothing of either direction stays in flight.
  IoResult fail(IoResult r);
  int submit_in(uint64_t generation, size_t length);
  IoResult result_of(const Slot& s, bool out);
  IoResult sync_out(std::span<const uint8_t> data, Deadline deadline);
  static IoResult from_error(int err, const char* what);

  libusb_context* ctx_;
  libusb_device_handle* handle_;
  uint8_t interface_;
  uint8_t ep_out_;
  uint8_t ep_in_;
  size_t mps_;

  std::mutex mu_;  // guards busy/done and the transfers cancel() may touch
  std::atomic<bool> cancel_{false};
  bool timed_out_ = false;
  Slots out_{};
  Slots in_{};
  std::deque<Slot*> out_fifo_;  // OUT transfers in flight, oldest first
  std::deque<Slot*> in_fifo_;   // IN transfers in flight, oldest first (possibly of the next transfer)
  uint64_t generation_ = 0;     // the IN transfer receive() reads next
  size_t ahead_ = 0;            // bytes queued for the next IN transfer
};

}  // namespace aisrv::client::usb
