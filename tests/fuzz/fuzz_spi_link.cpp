// aisrv fuzz target — the SPI link protocol, both ends' parsers and the slave state machine: the input is cut into
// transactions (a length byte, then that many MOSI bytes) fed to a LinkSlave whose interpreter answers at once (with
// the request's payload echoed, so answers of any size are read back); frame parsers run on every transaction too.
// Frames are CRC-checked, so the fuzzer mostly explores refusals unless seeds carry valid frames (tools/fuzz).
#include <cstddef>
#include <cstdint>
#include <span>

#include "aisrv/phy/spi_link_slave.hpp"
#include "aisrv/protocol/spi_link.h"

using namespace aisrv;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  phy::spi::LinkSlaveOptions o;
  o.max_frame = 256;
  o.boot = 1;
  o.max_payload = 4096;
  phy::spi::LinkSlave slave(
      o,
      [](const protocol::Request& req, protocol::Response& resp, std::function<void()> done) {
        resp.status = req.header.cmd == 0x55 ? 0 : AISRV_STATUS_ERROR_BAD_CMD;
        resp.payload.assign(req.payload.begin(), req.payload.end());
        done();
      },
      [](const std::string&) {});
  auto t = phy::spi::Clock::time_point{};
  size_t at = 0;
  while (at < size) {
    const size_t n = std::min<size_t>(size - at - 1, data[at]);
    const std::span<const uint8_t> rx(data + at + 1, n);
    aisrv_spi_request_t req;
    aisrv_spi_reply_t rep;
    const uint8_t* p = nullptr;
    (void)aisrv_spi_parse_request(rx.data(), rx.size(), 4096, &req, &p);
    (void)aisrv_spi_parse_reply(rx.data(), rx.size(), 4096, &rep, &p);
    slave.on_transaction(rx, n ? n + (data[at] & 3) : 0, t);
    if (slave.reply().size() > o.max_frame) __builtin_trap();
    t += std::chrono::milliseconds(data[at] & 0x40 ? 6000 : 1);  // now and then past the transfer timeout
    (void)slave.on_idle(t);
    at += 1 + n;
  }
  return 0;
}
