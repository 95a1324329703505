// aisrv tests — a USB link without USB, for unit tests of the framing on both sides. Two
// socketpair(AF_UNIX, SOCK_SEQPACKET) pairs stand in for bulk OUT and bulk IN: one message is one packet, a
// zero-length message is a zero-length packet, a message longer than the max packet size is babble. Beside the data
// it keeps what a real link has: endpoint halts (set by the device, refusing packets, cleared by the host), the
// interface's enabled state, and the control pipe, whose vendor requests go to the UsbConnection.
// Every packet is recorded (size per direction) so tests can check the bytes on the "bus"; faults can be injected by
// flipping a bit of a chosen packet.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "aisrv/client/usb_link.hpp"
#include "aisrv/phy/usb_device_endpoints.hpp"
#include "aisrv/phy/usb_connection.hpp"

namespace aisrv::test {

class SeqpacketLink {
 public:
  struct Packet {
    std::vector<uint8_t> bytes;
  };

  explicit SeqpacketLink(size_t max_packet) : mps_(max_packet), dev_(*this), host_(*this) {
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, out_) || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, in_))
      throw std::runtime_error("socketpair failed");
    dev_wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    host_wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~SeqpacketLink() {
    for (int fd : {out_[0], out_[1], in_[0], in_[1], dev_wake_, host_wake_}) ::close(fd);
  }
  SeqpacketLink(const SeqpacketLink&) = delete;
  SeqpacketLink& operator=(const SeqpacketLink&) = delete;

  phy::usb::DeviceEndpoints& device() { return dev_; }
  client::usb::HostEndpoints& host() { return host_; }
  void attach(phy::usb::UsbConnection* session) { session_ = session; }

  // The host configures / deconfigures the interface; close() ends the device's serving loop.
  void enable() {
    std::lock_guard lock(mu_);
    enabled_ = true;
    cv_.notify_all();
  }
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    wake(dev_wake_);
  }
  // Host side: abandon what is in progress (like a cancelled libusb transfer).
  void cancel_host() {
    host_cancel_.store(true);
    wake(host_wake_);
  }
  void uncancel_host() { host_cancel_.store(false); }

  // Packets seen on the bus so far, in order (OUT: host to device; IN: device to host).
  std::vector<size_t> out_sizes() {
    std::lock_guard lock(mu_);
    return out_sizes_;
  }
  std::vector<size_t> in_sizes() {
    std::lock_guard lock(mu_);
    return in_sizes_;
  }
  std::vector<std::vector<uint8_t>> out_packets() {
    std::lock_guard lock(mu_);
    return out_packets_;
  }
  std::vector<std::vector<uint8_t>> in_packets() {
    std::lock_guard lock(mu_);
    return in_packets_;
  }
  void clear_trace() {
    std::lock_guard lock(mu_);
    out_sizes_.clear();
    in_sizes_.clear();
    out_packets_.clear();
    in_packets_.clear();
  }
  size_t halts() const { return halts_.load(); }
  // Flip bit 0 of byte 0 of the n-th non-empty OUT / IN packet from now (0 = the next one).
  void corrupt_out(size_t nth) {
    std::lock_guard lock(mu_);
    corrupt_out_ = nth;
  }
  void corrupt_in(size_t nth) {
    std::lock_guard lock(mu_);
    corrupt_in_ = nth;
  }
  // The host sends raw packets (malformed framing).
  bool raw_out(std::span<const uint8_t> packet) {
    return host_.send_packet(packet, std::chrono::steady_clock::now() + std::chrono::seconds(5)).ok();
  }

 private:
  static void wake(int fd) {
    const uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  }
  static void reset(int fd) {
    uint64_t v;
    (void)!::read(fd, &v, sizeof v);
  }
  // Drops what is queued in a socket (packets a halt refuses, data a link reset drops). Call with mu_ held.
  static void drain_locked(int fd) {
    uint8_t buf[16];
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC) >= 0) {
    }
  }
  // Waits until `fd` is ready for `events` or `wake_fd` fired; false on timeout.
  static bool wait_fd(int fd, short events, int wake_fd, int timeout_ms) {
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    return poll(fds, 2, timeout_ms) > 0;
  }
  static void maybe_corrupt(std::optional<size_t>& counter, std::vector<uint8_t>& packet) {
    if (!counter || packet.empty()) return;
    if (*counter == 0) {
      packet[0] ^= 1;
      counter.reset();
    } else {
      --*counter;
    }
  }

  class Device final : public phy::usb::DeviceEndpoints {
   public:
    explicit Device(SeqpacketLink& l) : l_(l) {}
    bool wait_enabled() override {
      std::unique_lock lock(l_.mu_);
      l_.cv_.wait(lock, [&] { return l_.enabled_ || l_.closed_; });
      return !l_.closed_;
    }
    size_t max_packet() const override { return l_.mps_; }

    phy::usb::IoResult receive(phy::usb::ReceiveParts parts) override {
      using phy::usb::Io;
      const size_t capacity = phy::usb::total_size(parts);
      size_t total = 0;
      std::vector<uint8_t> packet(l_.mps_ + 1);
      while (total < capacity) {
        reset(l_.dev_wake_);
        ssize_t n;
        {
          std::lock_guard lock(l_.mu_);
          if (l_.closed_) return {Io::disabled, total, false, "closed"};
          if (l_.aborted_) return {Io::cancelled, total, false, "aborted"};
          n = recv(l_.out_[1], packet.data(), packet.size(), MSG_DONTWAIT | MSG_TRUNC);
          if (n >= 0) {
            l_.out_sizes_.push_back(static_cast<size_t>(n));
            l_.out_packets_.emplace_back(packet.begin(), packet.begin() + std::min<ssize_t>(n, l_.mps_ + 1));
          }
        }
        if (n < 0) {
          if (errno != EAGAIN) return {Io::failed, total, false, std::strerror(errno)};
          wait_fd(l_.out_[1], POLLIN, l_.dev_wake_, 1000);
          continue;
        }
        if (static_cast<size_t>(n) > l_.mps_) return {Io::failed, total, false, "babble: packet above max size"};
        // Scatter the packet at `total` over the parts (a packet may straddle two of them).
        for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
          size_t at = total + i;
          for (const auto& part : parts) {
            if (at < part.size()) {
              part[at] = packet[i];
              break;
            }
            at -= part.size();
          }
        }
        total += static_cast<size_t>(n);
        if (static_cast<size_t>(n) < l_.mps_) return {Io::ok, total, true, {}};
      }
      return {Io::ok, total, false, {}};
    }

    phy::usb::IoResult send(std::span<const uint8_t> head, std::span<const uint8_t> tail) override {
      using phy::usb::Io;
      std::vector<uint8_t> data(head.begin(), head.end());
      data.insert(data.end(), tail.begin(), tail.end());
      size_t off = 0;
      do {
        const size_t len = std::min(l_.mps_, data.size() - off);
        std::vector<uint8_t> packet(data.begin() + off, data.begin() + off + len);
        while (true) {
          reset(l_.dev_wake_);
          ssize_t n;
          {
            std::lock_guard lock(l_.mu_);
            if (l_.closed_) return {Io::disabled, off, false, "closed"};
            if (l_.aborted_) return {Io::cancelled, off, false, "aborted"};
            maybe_corrupt(l_.corrupt_in_, packet);
            n = ::send(l_.in_[0], packet.data(), packet.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
          }
          if (n >= 0) break;
          if (errno != EAGAIN) return {Io::failed, off, false, std::strerror(errno)};
          wait_fd(l_.in_[0], POLLOUT, l_.dev_wake_, 1000);
        }
        off += len;
      } while (off < data.size());
      return {Io::ok, data.size(), false, {}};
    }
    phy::usb::IoResult flush() override { return {}; }
    phy::usb::IoResult halt() override {
      {
        std::lock_guard lock(l_.mu_);
        l_.halted_out_ = l_.halted_in_ = true;
        drain_locked(l_.out_[1]);  // packets a halted endpoint never accepts
      }
      l_.halts_.fetch_add(1);
      wake(l_.host_wake_);
      return {};
    }
    void abort() override {
      {
        std::lock_guard lock(l_.mu_);
        l_.aborted_ = true;
        drain_locked(l_.out_[1]);
        drain_locked(l_.in_[1]);
      }
      wake(l_.dev_wake_);
    }
    void rearm() override {
      std::lock_guard lock(l_.mu_);
      if (!l_.closed_) l_.aborted_ = false;
    }

   private:
    SeqpacketLink& l_;
  };

  class Host final : public client::usb::HostEndpoints {
   public:
    explicit Host(SeqpacketLink& l) : l_(l) {}
    size_t max_packet() const override { return l_.mps_; }

    client::usb::IoResult send_packet(std::span<const uint8_t> bytes, client::usb::Deadline deadline) {
      using client::usb::Io;
      std::vector<uint8_t> packet(bytes.begin(), bytes.end());
      while (true) {
        reset(l_.host_wake_);
        if (l_.host_cancel_.load()) return {Io::cancelled, 0, false, "cancelled"};
        if (std::chrono::steady_clock::now() >= deadline) return {Io::timeout, 0, false, "timeout"};
        ssize_t n;
        {
          std::lock_guard lock(l_.mu_);
          if (l_.halted_out_) return {Io::stalled, 0, false, "OUT halted"};
          maybe_corrupt(l_.corrupt_out_, packet);
          n = ::send(l_.out_[0], packet.data(), packet.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        if (n >= 0) return {Io::ok, packet.size(), false, {}};
        if (errno != EAGAIN) return {Io::failed, 0, false, std::strerror(errno)};
        if (!wait_fd(l_.out_[0], POLLOUT, l_.host_wake_, ms_until(deadline)) &&
            std::chrono::steady_clock::now() >= deadline)
          return {Io::timeout, 0, false, "timeout"};
      }
    }

    client::usb::IoResult send(std::span<const uint8_t> data, client::usb::Deadline deadline, size_t) override {
      size_t off = 0;
      do {
        const size_t len = std::min(l_.mps_, data.size() - off);
        auto r = send_packet(data.subspan(off, len), deadline);
        if (!r.ok()) return r;
        off += len;
      } while (off < data.size());
      return {client::usb::Io::ok, data.size(), false, {}};
    }
    client::usb::IoResult flush(client::usb::Deadline) override { return {}; }

    client::usb::IoResult receive(size_t limit, const OnData& on_data, client::usb::Deadline deadline,
                                  size_t) override {
      using client::usb::Io;
      size_t total = 0;
      std::vector<uint8_t> packet(l_.mps_ + 1);
      while (true) {
        reset(l_.host_wake_);
        if (l_.host_cancel_.load()) return {Io::cancelled, total, false, "cancelled"};
        if (std::chrono::steady_clock::now() >= deadline) return {Io::timeout, total, false, "timeout"};
        ssize_t n;
        {
          std::lock_guard lock(l_.mu_);
          if (l_.halted_in_) return {Io::stalled, total, false, "IN halted"};
          n = recv(l_.in_[1], packet.data(), packet.size(), MSG_DONTWAIT | MSG_TRUNC);
          if (n >= 0) {
            l_.in_sizes_.push_back(static_cast<size_t>(n));
            l_.in_packets_.emplace_back(packet.begin(), packet.begin() + std::min<ssize_t>(n, l_.mps_ + 1));
          }
        }
        if (n < 0) {
          if (errno != EAGAIN) return {Io::failed, total, false, std::strerror(errno)};
          if (std::chrono::steady_clock::now() >= deadline) return {Io::timeout, total, false, "timeout"};
          wait_fd(l_.in_[1], POLLIN, l_.host_wake_, ms_until(deadline));
          continue;
        }
        if (static_cast<size_t>(n) > l_.mps_) return {Io::failed, total, false, "babble"};
        if (on_data && n > 0) on_data(std::span<const uint8_t>(packet.data(), static_cast<size_t>(n)));
        total += static_cast<size_t>(n);
        if (static_cast<size_t>(n) < l_.mps_) return {Io::ok, total, true, {}};
        if (total > limit) return {Io::ok, total, false, {}};
      }
    }

    client::usb::IoResult clear_halts() override {
      std::lock_guard lock(l_.mu_);
      l_.halted_in_ = l_.halted_out_ = false;
      return {};
    }
    client::usb::IoResult control_in(uint8_t request, uint16_t length, std::vector<uint8_t>& answer) override {
      auto a = l_.session_ ? l_.session_->control_in(request, 0, length) : std::nullopt;
      if (!a) return {client::usb::Io::stalled, 0, false, "ep0 stalled"};
      answer = std::move(*a);
      if (answer.size() > length) answer.resize(length);
      return {client::usb::Io::ok, answer.size(), true, {}};
    }
    client::usb::IoResult control_out(uint8_t request, uint16_t value = 0) override {
      if (!l_.session_ || !l_.session_->control_out(request, value, 0))
        return {client::usb::Io::stalled, 0, false, "ep0 stalled"};
      return {};
    }

   private:
    static int ms_until(client::usb::Deadline d) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now()).count();
      return static_cast<int>(std::clamp<long long>(ms, 0, 1000));
    }
    SeqpacketLink& l_;
  };

  size_t mps_;
  int out_[2]{-1, -1};  // [0] host writes, [1] device reads
  int in_[2]{-1, -1};   // [0] device writes, [1] host reads
  int dev_wake_ = -1, host_wake_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool enabled_ = false, closed_ = false, aborted_ = false;
  bool halted_out_ = false, halted_in_ = false;
  std::atomic<bool> host_cancel_{false};
  std::atomic<size_t> halts_{0};
  std::optional<size_t> corrupt_out_, corrupt_in_;
  std::vector<size_t> out_sizes_, in_sizes_;
  std::vector<std::vector<uint8_t>> out_packets_, in_packets_;
  phy::usb::UsbConnection* session_ = nullptr;
  Device dev_;
  Host host_;
};

}  // namespace aisrv::test
