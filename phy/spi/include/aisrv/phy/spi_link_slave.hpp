// aisrv phy/spi — the slave (server) end of the SPI link protocol (protocol/spi_link.h) as a state machine without
// I/O: a port hands it each transaction's received bytes and arms the reply it prepares for the next transaction.
//
//   idle ──BEGIN──▶ receiving ──last chunk verified──▶ executing (BUSY) ──done──▶ answered (READY) ──BEGIN/SYNC──▶ …
//
// A request payload is assembled from CRC-checked chunks at contiguous offsets (duplicates are acknowledged and
// ignored, gaps refused) and handed to the interpreter only when the whole transfer has arrived; a new BEGIN, a
// SYNC or the transfer timeout discards an incomplete transfer (logged), so nothing of it is ever applied. The
// answer stays readable, in any order and as often as asked, until the next BEGIN or SYNC.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aisrv/protocol/protocol.hpp"
#include "aisrv/protocol/spi_link.h"

namespace aisrv::phy::spi {

using Clock = std::chrono::steady_clock;

struct LinkSlaveOptions {
  uint16_t max_frame = AISRV_SPI_DEFAULT_FRAME;  // largest transaction this side takes (fixed: the frame size)
  bool fixed = false;                            // every transaction must be exactly max_frame bytes
  uint32_t max_payload = AISRV_MAX_PAYLOAD;      // larger requests are answered ERROR_BAD_LENGTH at once
  std::chrono::milliseconds transfer_timeout{5000};  // an incomplete request idle this long is discarded
  uint32_t boot = 0;                             // server instance id in every reply (0: random)
};

struct LinkStats {
  uint64_t transactions = 0;  // CS windows with at least one clock
  uint64_t bytes = 0;         // bytes clocked
  uint64_t accepted = 0;      // request frames accepted
  uint64_t rejected = 0;      // request frames rejected (any reason)
  uint64_t crc_errors = 0;    // of those: CRC mismatch
  uint64_t commands = 0;      // commands handed to the interpreter
  uint64_t discarded = 0;     // incomplete transfers discarded (new transfer, SYNC, timeout)
  uint64_t replays = 0;       // the previous frame received again (a controller's stale buffer): ignored
  std::array<uint64_t, 16> by_error{};  // rejected frames per aisrv_spi_error_t
};

class LinkSlave {
 public:
  // Runs a complete request: must eventually call `done` (on any thread) after filling the response.
  using Executor = std::function<void(const protocol::Request&, protocol::Response&, std::function<void()> done)>;
  // A line for the server's debug log (discarded transfers, refused requests).
  using LogSink = std::function<void(const std::string&)>;

  LinkSlave(LinkSlaveOptions options, Executor execute, LogSink log);
  ~LinkSlave();
  LinkSlave(const LinkSlave&) = delete;
  LinkSlave& operator=(const LinkSlave&) = delete;

  // Bytes to shift out on MISO in the next transaction: the reply to the last request frame.
  std::span<const uint8_t> reply() const { return {reply_.data(), reply_len_}; }
  // Bytes to arm for receiving (max_frame).
  size_t receive_capacity() const { return options_.max_frame; }
  // One transaction. `rx` holds the first min(clocked, receive_capacity()) MOSI bytes; `clocked` is how many bytes
  // the master clocked (0: CS toggled without clocks — ignored).
  void on_transaction(std::span<const uint8_t> rx, size_t clocked, Clock::time_point now = Clock::now());
  // Called when no transaction came for a while: discards an incomplete transfer past the timeout. Returns true
  // when the reply changed (the port should re-arm with the new one).
  bool on_idle(Clock::time_point now = Clock::now());
  // Commands handed to the interpreter that have not completed yet.
  size_t in_flight() const;

  const LinkStats& stats() const { return stats_; }
  uint32_t boot() const { return boot_; }
  const LinkSlaveOptions& options() const { return options_; }

 private:
  struct Pending;
  struct Transfer;

  aisrv_spi_error_t handle(const aisrv_spi_request_t& req, std::span<const uint8_t> payload, Clock::time_point now,
                           uint32_t& answer_offset);
  aisrv_spi_error_t begin(const aisrv_spi_request_t& req, std::span<const uint8_t> payload, Clock::time_point now);
  aisrv_spi_error_t data(const aisrv_spi_request_t& req, std::span<const uint8_t> payload, Clock::time_point now);
  void complete_request();
  void discard(const char* why);
  void build_reply(uint8_t seq, aisrv_spi_error_t error, uint32_t answer_offset, uint16_t want);

  LinkSlaveOptions options_;
  Executor execute_;
  LogSink log_;
  uint32_t boot_;
  std::unique_ptr<Transfer> transfer_;
  std::optional<uint16_t> timed_out_xfer_;  // the transfer the timeout discarded (its frames get TIMEOUT)
  uint8_t last_seq_ = 0;                  // seq echoed by the armed reply
  std::optional<uint8_t> last_frame_seq_;  // seq of the last valid frame (a repeat of it is a stale replay)
  std::vector<std::shared_ptr<Pending>> running_;  // executing commands, including abandoned ones
  std::vector<uint8_t> reply_;
  size_t reply_len_ = 0;
  LinkStats stats_;
};

}  // namespace aisrv::phy::spi
