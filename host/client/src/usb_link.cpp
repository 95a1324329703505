// aisrv host — USB bulk framing, host side: command packet, SET payload with CRC trailer, status, GET payload,
// stall recovery (clear halts + LastError) and link reset after an interrupted command.
#include "aisrv/client/usb_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "aisrv/protocol/usb_link.hpp"

namespace aisrv::client::usb {

namespace pusb = protocol::usb;

namespace {

// Bytes handed to one send() of a large SET payload: a multiple of every bulk max packet size; the CRC of one piece
// is computed while the previous ones are on the bus.
constexpr size_t kSendPiece = 256u << 10;

void put_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// A status word is OKAY or exactly one error bit of the table.
bool valid_status(uint32_t s) {
  return s == AISRV_STATUS_OKAY || ((s & AISRV_STATUS_ERROR_MASK) == s && (s & (s - 1)) == 0);
}

}  // namespace

IoResult UsbHostLink::reset(bool new_session) {
  IoResult r = ep_.control_out(static_cast<uint8_t>(pusb::VendorRequest::reset_link),
                               new_session ? pusb::kResetNewSession : 0);
  if (r.io == Io::stalled) return ep_.clear_halts();  // a device without the request (XMOS)
  if (r.ok()) (void)ep_.clear_halts();                // in case the device stalled before the reset
  return r;
}

Error UsbHostLink::stalled(const protocol::Header& h, const char* phase) {
  const IoResult cleared = ep_.clear_halts();
  if (cleared.io == Io::gone) {
    gone_ = true;
    return make_error(Errc::io_error, "{} disconnected while clearing a stall", name_);
  }
  std::vector<uint8_t> answer;
  const IoResult r = ep_.control_in(static_cast<uint8_t>(pusb::VendorRequest::last_error), pusb::kLastErrorMaxSize,
                                    answer);
  if (r.ok()) {
    if (auto e = pusb::decode_last_error(answer); e && e->status != AISRV_STATUS_OKAY)
      return Error{from_status(e->status), e->message};
  }
  return make_error(Errc::protocol_error, "{} stalled {} during the {} and gave no reason{}", name_,
                    protocol::command_name(h.cmd), phase, r.ok() ? "" : " (" + r.detail + ")");
}

Error UsbHostLink::fail(const IoResult& r, const protocol::Header& h, const char* phase, Deadline deadline) {
  const std::string_view cmd = protocol::command_name(h.cmd);
  switch (r.io) {
    case Io::stalled: return stalled(h, phase);
    case Io::gone:
      gone_ = true;
      return make_error(Errc::io_error, "{} disconnected during the {} of {}", name_, phase, cmd);
    case Io::timeout:
    case Io::cancelled:
    case Io::failed:
    case Io::ok: {
      const IoResult rs = reset();
      if (rs.io == Io::gone) gone_ = true;
      // A SET given up while its status was awaited, after every byte of its data had reached the device, may have
      // been carried out: say so, the caller cannot tell otherwise. Before that, the server never applies it.
      const bool maybe_done = protocol::host_sends(h.cmd) && std::string_view(phase) == "status" && r.data_sent;
      const std::string_view effect =
          maybe_done ? "; all its data had reached the device, so the server may have carried it out" : "";
      if (r.io == Io::timeout) {
        (void)deadline;
        return make_error(Errc::timeout, "no answer from {} in time ({} {}); the command was abandoned{}", name_, cmd,
                          phase, effect);
      }
      if (r.io == Io::cancelled) return make_error(Errc::cancelled, "{} cancelled during the {}{}", cmd, phase, effect);
      return make_error(Errc::io_error, "{} failed during the {} on {}: {}", cmd, phase, name_, r.detail);
    }
  }
  return make_error(Errc::io_error, "{}: {}", name_, r.detail);
}

size_t UsbHostLink::expected_answer(const protocol::Header& h, size_t trailer) const {
  const auto it = answer_sizes_.find(std::make_tuple(h.cmd, h.engine, h.tensor));
  return (it != answer_sizes_.end() ? it->second : 0) + trailer + 1;
}

Status UsbHostLink::transact(const protocol::Header& header, std::span<const uint8_t> payload,
                             protocol::Response& response, bool crc, Deadline deadline) {
  response.clear();
  gone_ = false;
  const bool set = protocol::host_sends(header.cmd);        // a data phase on OUT
  const bool returns = protocol::server_returns(header.cmd);  // a payload transfer on IN after the status
  if (header.cmd & pusb::kCrcFlag)
    return make_error(Errc::invalid_argument,
                      "opcode {:#x} uses bit 31, which the USB framing reserves for the CRC flag", header.cmd);
  if (!set && !payload.empty())
    return make_error(Errc::bad_length,
                      "{} carries no payload ({} bytes given): on USB only SET commands (opcode bit 0x80) have a data "
                      "phase",
                      protocol::command_name(header.cmd), payload.size());
  const size_t mps = ep_.max_packet();

  std::array<uint8_t, protocol::kHeaderSize> packet{};
  pusb::encode_command_packet(header, crc, packet);
  const size_t trailer = crc ? pusb::kCrcSize : 0;
  IoResult r;
  if (set && (crc || (one_transfer_ && !payload.empty()))) {
    // With the CRC flag — or, without it, to a device that announced AISRV_CAP_USB_ONE_TRANSFER — a SET goes as one
    // transfer: header, payload, CRC (more than 12 bytes, so the device tells it from a command packet; an empty
    // payload without CRC therefore goes the classic way). Every piece but the last is a multiple of the packet
    // size: the first carries the header and the payload's first bytes, the last the payload's end and the CRC.
    const size_t n = payload.size();
    const size_t total = protocol::kHeaderSize + n + trailer;
    const size_t body_end = (protocol::kHeaderSize + n) / mps * mps;  // transfer offset where the full packets end
    uint32_t sum = pusb::crc32(0, packet);
    size_t pos = 0;  // payload bytes handed to the endpoint so far
    if (body_end >= mps) {
      pos = mps - protocol::kHeaderSize;
      head_.assign(packet.begin(), packet.end());
      head_.insert(head_.end(), payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(pos));
      if (crc) sum = pusb::crc32(sum, payload.first(pos));
      r = ep_.send(head_, deadline, total - mps);
      if (!r.ok()) return fail(r, header, "command packet", deadline);
      while (pos + protocol::kHeaderSize < body_end) {
        const auto piece = payload.subspan(pos, std::min(kSendPiece, body_end - protocol::kHeaderSize - pos));
        r = ep_.send(piece, deadline, total - protocol::kHeaderSize - pos - piece.size());
        if (!r.ok()) return fail(r, header, "data phase", deadline);
        if (crc) sum = pusb::crc32(sum, piece);  // while the piece is on the bus
        pos += piece.size();
      }
      tail_.clear();
    } else {
      tail_.assign(packet.begin(), packet.end());  // all of it fits in one piece
    }
    const auto rest = payload.subspan(pos);
    tail_.insert(tail_.end(), rest.begin(), rest.end());
    if (crc) {
      sum = pusb::crc32(sum, rest);
      tail_.resize(tail_.size() + pusb::kCrcSize);
      put_le32(tail_.data() + tail_.size() - pusb::kCrcSize, sum);
    }
    if (!tail_.empty()) r = ep_.send(tail_, deadline, total % mps == 0 ? 1 : 0);
    if (r.ok() && total % mps == 0) r = ep_.send({}, deadline);  // zero-length packet ends the transfer
    if (!r.ok()) return fail(r, header, "data phase", deadline);
  } else {
    // The command packet: 12 bytes, a short packet, so a transfer of its own; a SET's payload is the next transfer.
    // A GET expecting a large answer sends it without waiting, so the answer's reads are queued at once.
    r = ep_.send(packet, deadline, set ? payload.size() + 1 : expected_answer(header, trailer));
    if (!r.ok()) return fail(r, header, "command packet", deadline);
    if (set) {
      const size_t n = payload.size();
      const size_t full = n / mps * mps;  // the part that travels in full packets
      for (size_t off = 0; off < full; off += kSendPiece) {
        const auto piece = payload.subspan(off, std::min(kSendPiece, full - off));
        r = ep_.send(piece, deadline, n - off - piece.size() + 1);
        if (!r.ok()) return fail(r, header, "data phase", deadline);
      }
      const auto rest = payload.subspan(full);
      if (!rest.empty()) r = ep_.send(rest, deadline);
      if (r.ok() && n % mps == 0) r = ep_.send({}, deadline);  // zero-length packet ends the transfer
      if (!r.ok()) return fail(r, header, "data phase", deadline);
    }
  }
  // A GET's payload follows its status on IN: read ahead as much as the last answer to the same command had.
  const auto key = std::make_tuple(header.cmd, header.engine, header.tensor);
  const size_t read_ahead = returns ? expected_answer(header, trailer) : 0;

  // Status word: exactly 4 bytes in a transfer of its own.
  std::array<uint8_t, pusb::kStatusSize> status_bytes{};
  size_t status_len = 0;
  r = ep_.receive(
      mps,
      [&](std::span<const uint8_t> part) {
        const size_t take = std::min(part.size(), status_bytes.size() - std::min(status_len, status_bytes.size()));
        std::copy_n(part.begin(), take, status_bytes.begin() + static_cast<std::ptrdiff_t>(status_len));
        status_len += part.size();
      },
      deadline, read_ahead);
  if (!r.ok()) return fail(r, header, "status", deadline);
  if (IoResult f = ep_.flush(deadline); !f.ok()) return fail(f, header, "data phase", deadline);  // OUT queued above
  if (!r.ended || status_len != pusb::kStatusSize) {
    (void)reset();
    return make_error(Errc::protocol_error, "{} answered {} with a {}{}-byte status transfer; expected 4 bytes", name_,
                      protocol::command_name(header.cmd), r.ended ? "" : "over ", status_len);
  }
  const uint32_t status = get_le32(status_bytes.data());
  if (!valid_status(status)) {
    (void)reset();
    return make_error(Errc::protocol_error, "{} answered {} with an invalid status word {:#010x}", name_,
                      protocol::command_name(header.cmd), status);
  }

  if (returns) {
    const size_t limit = size_t{AISRV_MAX_PAYLOAD} + trailer;
    uint32_t sum = crc ? pusb::crc32(0, status_bytes) : 0;
    size_t covered = 0;
    auto& out = response.payload;
    out.reserve(read_ahead);  // the size of the last answer: no reallocation while it arrives
    r = ep_.receive(
        limit,
        [&](std::span<const uint8_t> part) {
          out.insert(out.end(), part.begin(), part.end());
          if (!crc) return;
          // Everything but the last 4 bytes seen so far: the trailer is the transfer's last 4 bytes.
          const size_t upto = out.size() > trailer ? out.size() - trailer : 0;
          if (upto > covered) {
            sum = pusb::crc32(sum, std::span<const uint8_t>(out.data() + covered, upto - covered));
            covered = upto;
          }
        },
        deadline);
    if (!r.ok()) return fail(r, header, "response", deadline);
    if (!r.ended || out.size() > limit) {
      (void)reset();
      out.clear();
      return make_error(Errc::protocol_error, "{} answered {} with more than {} bytes", name_,
                        protocol::command_name(header.cmd), limit);
    }
    if (crc) {
      if (out.size() < trailer) {
        out.clear();
        return make_error(Errc::crc_error, "{} answered {} with {} bytes, too short for the CRC trailer", name_,
                          protocol::command_name(header.cmd), out.size());
      }
      const size_t n = out.size() - trailer;
      if (covered < n) sum = pusb::crc32(sum, std::span<const uint8_t>(out.data() + covered, n - covered));
      const uint32_t sent = get_le32(out.data() + n);
      out.resize(n);
      if (sent != sum) {
        out.clear();
        return make_error(Errc::crc_error,
                          "the answer to {} from {} is corrupt: CRC of {} bytes computed {:#010x}, trailer {:#010x}",
                          protocol::command_name(header.cmd), name_, n, sum, sent);
      }
    }
    if (answer_sizes_.size() >= 256 && !answer_sizes_.count(key)) answer_sizes_.clear();
    answer_sizes_[key] = out.size();
  }
  response.status = status;
  return ok();
}

}  // namespace aisrv::client::usb
