// aisrv phy/usb — device-side framing: command packet, data phase with the optional CRC trailer (input tensors
// received into a buffer the interpreter session adopts), interpreter call, status and GET payload (output tensors
// straight from the session's tensor), stalls with a LastError record, and the ep0 vendor requests.
#include "aisrv/phy/usb_connection.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "aisrv/port.hpp"
#include "crc_worker.hpp"
#include "payload_buffer.hpp"

namespace aisrv::phy::usb {

namespace pusb = protocol::usb;

namespace {

// Payload pages kept resident between requests; above this they are given back after the request.
constexpr size_t kKeepResident = 4u << 20;
// The payload buffer's granule: a multiple of every bulk max packet size (64, 512, 1024).
constexpr size_t kGranule = 4096;
// SET payloads at least this large (in practice input tensors) are received into a buffer of their own size that
// the session may adopt as its input tensor.
constexpr size_t kDonorMin = 64u << 10;
// Output tensors up to this size are sent straight from where the session keeps them (PayloadSink); larger ones are
// copied first, so the session's tensors are never held while this thread waits for the host to read (the
// FunctionFS endpoints queue 32 writes of 256 KiB; an answer's status and terminating packet take two).
constexpr size_t kSinkMax = 4u << 20;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

void put_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

Result<std::unique_ptr<UsbConnection>> UsbConnection::create(server::Port& server, DeviceEndpoints& endpoints,
                                                       std::shared_ptr<spdlog::logger> logger) {
  // Room for the header, the largest payload, its CRC trailer and the packet that ends the transfer.
  const size_t size =
      round_up(protocol::kHeaderSize + size_t{server.limits().max_payload} + pusb::kCrcSize + 1, kGranule) + kGranule;
  auto buffer = std::make_unique<PayloadBuffer>(size);
  if (!buffer->valid())
    return make_error(Errc::internal, "cannot reserve {} bytes of address space for USB payloads", size);
  return std::unique_ptr<UsbConnection>(new UsbConnection(server, endpoints, std::move(logger), std::move(buffer)));
}

UsbConnection::UsbConnection(server::Port& server, DeviceEndpoints& endpoints, std::shared_ptr<spdlog::logger> logger,
                       std::unique_ptr<PayloadBuffer> buffer)
    : server_(server),
      endpoints_(endpoints),
      logger_(std::move(logger)),
      buffer_(std::move(buffer)),
      crc_(std::make_unique<CrcWorker>()) {}

UsbConnection::~UsbConnection() = default;

void UsbConnection::run() {
  while (endpoints_.wait_enabled()) {
    if (logger_) logger_->info("USB: interface enabled, max packet size {}", endpoints_.max_packet());
    // The host's session lasts while the interface is enabled; a host program that starts anew asks for a fresh
    // one (RESET_LINK with the new-session flag).
    session_ = server_.open_session(server::Peer::of(server::Trust::physical, "usb", "host"));
    while (serve_one() == Step::next) {
      if (new_session_.exchange(false)) {
        server_.close_session(*session_, "the USB host started a new session");
        session_ = server_.open_session(server::Peer::of(server::Trust::physical, "usb", "host"));
      }
    }
    server_.close_session(*session_, "the USB interface was disabled");
    if (logger_) logger_->info("USB: interface disabled");
  }
}

UsbConnection::Step UsbConnection::io_failed(const IoResult& r, const char* phase) {
  switch (r.io) {
    case Io::ok: return Step::next;
    case Io::cancelled:
      if (logger_) logger_->debug("USB: link reset during the {}; the command is dropped", phase);
      return Step::next;
    case Io::disabled: return Step::link_down;
    case Io::failed:
      if (logger_) logger_->warn("USB: {} failed: {}; the command is dropped", phase, r.detail);
      // The interface is still enabled, so the host's session goes on (its tensors stay); do not spin on an
      // endpoint that keeps failing.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return Step::next;
  }
  return Step::link_down;
}

std::string UsbConnection::note(const protocol::Header& h, Errc code, const std::string& message) {
  server_.note_error(*session_, h.engine, protocol::command_name(h.cmd), Error{code, message});
  const uint32_t engines = server_.limits().engines;
  return server_.last_line(*session_, h.engine < engines ? h.engine : engines);
}

void UsbConnection::stall(uint32_t status, const std::string& line) {
  {
    std::lock_guard lock(mu_);
    last_error_.status = status;
    last_error_.stalls += 1;
    last_error_.message = line;
  }
  if (logger_) logger_->warn("USB: {} ({}); stalling both endpoints", line, protocol::status_name(status));
  const IoResult r = endpoints_.halt();
  if (!r.ok() && logger_) logger_->warn("USB: cannot stall the endpoints: {}", r.detail);
}

UsbConnection::Step UsbConnection::serve_one() {
  endpoints_.rearm();
  const size_t mps = endpoints_.max_packet();
  if (mps == 0 || kGranule % mps != 0) {
    if (logger_) logger_->error("USB: unusable max packet size {}", mps);
    return Step::link_down;
  }
  const size_t limit = size_t{server_.limits().max_payload};
  // The first transfer of a command: a 12-byte command packet, or — for a SET — the header, the payload and (with
  // the CRC flag) the CRC in one transfer (AISRV_CAP_USB_ONE_TRANSFER). Read with room for the largest of those plus
  // the terminating packet: the header into command_, then a payload of the repeated SET size into donor_,
  // the rest into the buffer.
  const size_t first_capacity =
      std::min(round_up(protocol::kHeaderSize + limit + pusb::kCrcSize + 1, mps), buffer_->size() / mps * mps);
  const size_t first_donor = first_capacity - protocol::kHeaderSize > donor_.size() ? donor_.size() : 0;
  const std::array<std::span<uint8_t>, 3> first_parts{
      std::span<uint8_t>(command_), std::span<uint8_t>(donor_.data(), first_donor),
      buffer_->span(first_capacity - protocol::kHeaderSize - first_donor)};
  IoResult r = endpoints_.receive(first_parts);
  if (!r.ok()) return io_failed(r, "command packet");
  if (r.bytes < protocol::kHeaderSize || (r.bytes == protocol::kHeaderSize && !r.ended)) {
    const std::string line = fmt::format("USB: command packet of {} bytes; a command packet is exactly {} bytes",
                                         r.bytes, protocol::kHeaderSize);
    server_.note_line(*session_, server_.limits().engines, AISRV_STATUS_ERROR_BAD_CMD, line);
    stall(AISRV_STATUS_ERROR_BAD_CMD, line);
    return Step::next;
  }
  const pusb::CommandPacket packet = pusb::decode_command_packet(command_);
  const protocol::Header& h = packet.header;
  commands_.fetch_add(1);
  const bool set = protocol::host_sends(h.cmd);
  const bool combined = r.bytes > protocol::kHeaderSize;
  if (combined && !set) {
    const std::string line =
        fmt::format("USB: command packet of {}{} bytes; a command packet is exactly {} bytes (only a SET may carry its "
                    "payload in the same transfer)",
                    r.ended ? "" : "over ", r.bytes, protocol::kHeaderSize);
    server_.note_line(*session_, server_.limits().engines, AISRV_STATUS_ERROR_BAD_CMD, line);
    stall(AISRV_STATUS_ERROR_BAD_CMD, line);
    return Step::next;
  }

  std::span<const uint8_t> payload;
  size_t in_buffer = 0;  // SET data bytes that landed in the payload buffer
  if (set) {
    const size_t trailer = packet.crc ? pusb::kCrcSize : 0;
    size_t n = 0;           // payload (+ trailer) bytes
    size_t donor_part = 0;  // how many of them could land in donor_ (the rest went to the payload buffer)
    if (combined) {
      if (!r.ended || r.bytes - protocol::kHeaderSize > limit + trailer) {
        const std::string line = note(
            h, Errc::bad_length,
            fmt::format("USB transfer of {}{} bytes exceeds the limit of {} bytes (header, {} payload, 4-byte CRC); "
                        "nothing was applied",
                        r.ended ? "" : "more than ", r.bytes, protocol::kHeaderSize + limit + trailer, limit));
        stall(AISRV_STATUS_ERROR_BAD_LENGTH, line);
        return Step::next;
      }
      n = r.bytes - protocol::kHeaderSize;
      donor_part = first_donor;
    } else {
      // Classic framing: the payload is the next transfer, received as the first transfer is.
      const size_t capacity = std::min(round_up(limit + trailer + 1, mps), buffer_->size() / mps * mps);
      donor_part = capacity > donor_.size() ? donor_.size() : 0;
      const std::array<std::span<uint8_t>, 2> parts{std::span<uint8_t>(donor_.data(), donor_part),
                                                    buffer_->span(capacity - donor_part)};
      r = endpoints_.receive(parts);
      if (!r.ok()) return io_failed(r, "data phase");
      if (!r.ended || r.bytes > limit + trailer) {
        const std::string line = note(
            h, Errc::bad_length,
            fmt::format("USB data transfer of {}{} bytes exceeds the limit of {} bytes ({} payload{}); nothing was "
                        "applied",
                        r.ended ? "" : "more than ", r.bytes, limit + trailer, limit,
                        packet.crc ? " + 4-byte CRC" : ""));
        stall(AISRV_STATUS_ERROR_BAD_LENGTH, line);
        return Step::next;
      }
      n = r.bytes;
    }
    in_buffer = n > donor_part ? n - donor_part : 0;
    const size_t length = n >= trailer ? n - trailer : 0;
    const std::span<const uint8_t> data = gather(n, donor_part, length);
    if (packet.crc) {
      std::string problem;
      if (n < pusb::kCrcSize) {
        problem = fmt::format("the {}-byte data transfer cannot hold the 4-byte CRC trailer", n);
      } else {
        n -= pusb::kCrcSize;
        // Over the command packet and the payload; the payload's part on two threads.
        const uint32_t crc = pusb::crc32_combine(pusb::crc32(0, command_), crc_->crc(data), n);
        std::array<uint8_t, pusb::kCrcSize> sent_bytes{};
        for (size_t i = 0; i < sent_bytes.size(); ++i) sent_bytes[i] = data_byte(n + i, donor_part, data);
        const uint32_t sent = get_le32(sent_bytes.data());
        if (sent != crc)
          problem = fmt::format("CRC mismatch over {} payload bytes: computed {:#010x}, trailer {:#010x}", n, crc,
                                sent);
      }
      if (!problem.empty()) {
        note(h, Errc::crc_error, problem + "; nothing was applied");
        response_.clear();
        response_.status = AISRV_STATUS_ERROR_CRC;
        return respond(h, packet.crc);
      }
    }
    payload = data;
  }

  request_.header = h;
  request_.payload = payload;
  // A GET's answer may go out straight from where the output tensor lies (write()).
  request_.sink = protocol::server_returns(h.cmd) ? this : nullptr;
  answer_crc_ = packet.crc;
  answer_ = {};
  // A payload that is exactly donor_ may become the input tensor's storage (donor_ then holds the old one).
  request_.donor = !payload.empty() && payload.data() == donor_.data() && payload.size() == donor_.size() ? &donor_
                                                                                                       : nullptr;
  server_.handle(*session_, request_, response_);
  if (in_buffer > kKeepResident) buffer_->release_above(kKeepResident);
  if (set && response_.status == AISRV_STATUS_OKAY) size_donor(payload.size());

  if (response_.status == AISRV_STATUS_ERROR_BAD_ENGINE || response_.status == AISRV_STATUS_ERROR_BAD_CMD) {
    // As XMOS: a command for no engine, or no command at all, stalls the link. The interpreter logged why, in this
    // session's lines of the engine (an unknown opcode) or of the server (no such engine).
    const uint32_t engines = server_.limits().engines;
    const bool engine_scope = h.engine < engines && response_.status == AISRV_STATUS_ERROR_BAD_CMD;
    stall(response_.status, server_.last_line(*session_, engine_scope ? h.engine : engines));
    return Step::next;
  }
  return respond(h, packet.crc);
}

std::span<const uint8_t> UsbConnection::gather(size_t n, size_t donor_part, size_t length) {
  // The n data bytes are donor_[0, donor_part) followed by the payload buffer. The payload (the first `length` of
  // them) is used in place when it lies in one of the two; else the parts are joined in the payload buffer.
  uint8_t* const buf = buffer_->data();
  if (donor_part == 0) return {buf, length};
  if (length <= donor_part) return {donor_.data(), length};
  const size_t rest = n - donor_part;
  std::memmove(buf + donor_part, buf, rest);
  std::memcpy(buf, donor_.data(), donor_part);
  return {buf, length};
}

uint8_t UsbConnection::data_byte(size_t i, size_t donor_part, std::span<const uint8_t> data) const {
  // Byte i of the SET data (payload then trailer) after gather(): joined data is contiguous from data.data(); a
  // payload used in place in donor_ continues in donor_ and then at the start of the payload buffer.
  if (data.data() != donor_.data()) return data.data()[i];
  return i < donor_part ? donor_[i] : buffer_->data()[i - donor_part];
}

void UsbConnection::size_donor(size_t n) {
  // Sized to a payload once the same size was accepted twice in a row among the SETs of at least kDonorMin bytes —
  // in an inference loop the input tensor (START_INFER and other small SETs in between do not count); a one-off
  // size (a model) or inputs of different sizes in turn leave it as it is. Which command may adopt the buffer is
  // the interpreter's business (Request::donor).
  if (n < kDonorMin) return;
  const bool repeat = n == last_input_size_;
  last_input_size_ = n;
  if (!repeat || donor_.size() == n) return;
  donor_.resize(n);
  donor_.shrink_to_fit();
}

UsbConnection::Step UsbConnection::respond(const protocol::Header& h, bool crc) {
  if (response_.sent) {  // status and payload went out from the session's tensor (write() below)
    if (!answer_.ok()) return io_failed(answer_, answer_phase_);
  } else {
    const char* phase = "status";
    const IoResult r = send_answer(response_.status, response_.payload, protocol::server_returns(h.cmd), crc, phase);
    if (!r.ok()) return io_failed(r, phase);
  }
  const IoResult r = endpoints_.flush();
  if (!r.ok()) return io_failed(r, "response");
  return Step::next;
}

bool UsbConnection::write(std::span<const uint8_t> payload) {
  // Only what the endpoint can queue without waiting for the host: the session's tensors are held during this call.
  if (payload.size() > kSinkMax) return false;
  answer_phase_ = "status";
  answer_ = send_answer(AISRV_STATUS_OKAY, payload, true, answer_crc_, answer_phase_);
  return true;
}

IoResult UsbConnection::send_answer(uint32_t status, std::span<const uint8_t> payload, bool has_payload, bool crc,
                                 const char*& phase) {
  const size_t mps = endpoints_.max_packet();
  put_le32(status_.data(), status);
  phase = "status";
  IoResult r = endpoints_.send(status_);
  if (!r.ok() || !has_payload) return r;
  phase = "response";
  size_t total = payload.size();
  if (crc) {
    // The trailer follows the payload in the same transfer. The full packets are queued first and the CRC is
    // computed while they are on the bus; then the last partial packet with the trailer.
    const size_t full = payload.size() / mps * mps;
    if (full > 0) {
      r = endpoints_.send(payload.first(full));
      if (!r.ok()) return r;
    }
    // On this thread only: a second one would take the CPU the transfer needs on a device with few cores (measured
    // in the QEMU guest: with the CRC on two threads the payload did not move until it was done).
    const uint32_t sum = pusb::crc32_combine(pusb::crc32(0, status_), pusb::crc32(0, payload), payload.size());
    const auto rest = payload.subspan(full);
    tail_.assign(rest.begin(), rest.end());
    tail_.resize(rest.size() + pusb::kCrcSize);
    put_le32(tail_.data() + rest.size(), sum);
    total += pusb::kCrcSize;
    r = endpoints_.send(tail_);
  } else if (!payload.empty()) {
    r = endpoints_.send(payload);
  }
  if (!r.ok()) return r;
  if (total % mps == 0) r = endpoints_.send({});  // FunctionFS never adds the zero-length packet that ends it
  return r;
}

std::optional<std::vector<uint8_t>> UsbConnection::control_in(uint8_t request, uint16_t value, uint16_t length) {
  (void)value;
  if (request == static_cast<uint8_t>(pusb::VendorRequest::last_error))
    return pusb::encode_last_error(last_error(), length);
  return std::nullopt;
}

bool UsbConnection::control_out(uint8_t request, uint16_t value, uint16_t length) {
  if (request == static_cast<uint8_t>(pusb::VendorRequest::reset_link) && length == 0) {
    const bool fresh = (value & pusb::kResetNewSession) != 0;
    if (logger_) logger_->info("USB: link reset by the host{}", fresh ? " (new host session)" : "");
    if (fresh) new_session_.store(true);
    endpoints_.abort();
    return true;
  }
  return false;
}

pusb::LastError UsbConnection::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

}  // namespace aisrv::phy::usb
