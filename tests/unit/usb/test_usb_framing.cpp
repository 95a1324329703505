// aisrv tests — the USB bulk framing end to end without USB: the device session (phy/usb UsbConnection, with the real
// interpreter and test-double engines) and the host framing (host/client UsbHostLink) talk over SeqpacketLink, one
// SOCK_SEQPACKET message per packet. Checks the bytes on the "bus" (command packet, short packets, zero-length
// packets, CRC trailers), every payload length around packet multiples, CRC mismatches, stalls with their reason,
// limits, and commands abandoned half way.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "aisrv/client/client.hpp"
#include "aisrv/client/usb_link.hpp"
#include "aisrv/phy/usb_connection.hpp"
#include "aisrv/protocol/crc32.h"
#include "aisrv/protocol/usb_link.hpp"
#include "aisrv/server.hpp"
#include "seqpacket_link.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace std::chrono_literals;
using protocol::Command;
namespace pusb = protocol::usb;

namespace {

uint32_t op(Command c) { return static_cast<uint32_t>(c); }

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

struct Rig {
  explicit Rig(size_t mps, uint32_t max_payload = AISRV_MAX_PAYLOAD) : link(mps) {
    server::ServerOptions so;
    so.max_payload = max_payload;
    so.extra_capabilities = AISRV_CAP_CRC32;
    std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
    backends.push_back(std::make_unique<test::TestBackend>());
    backends.push_back(std::make_unique<test::TestBackend>());
    server = std::move(server::Server::create(std::move(so), std::move(backends))).value();
    session = std::move(phy::usb::UsbConnection::create(*server, link.device())).value();
    link.attach(session.get());
    link.enable();
    host = std::make_unique<client::usb::UsbHostLink>(link.host(), "test link");
    serving = std::thread([this] { session->run(); });
  }
  ~Rig() {
    link.close();
    serving.join();
  }

  Result<protocol::Response> call(uint32_t cmd, uint32_t engine, uint32_t tensor, std::span<const uint8_t> payload,
                                  bool crc, std::chrono::milliseconds timeout = 20s) {
    protocol::Response r;
    AISRV_TRY(host->transact(protocol::Header{cmd, engine, tensor}, payload, r, crc,
                             std::chrono::steady_clock::now() + timeout));
    return r;
  }
  uint32_t status_of(uint32_t cmd, uint32_t engine, uint32_t tensor, std::span<const uint8_t> payload, bool crc) {
    auto r = call(cmd, engine, tensor, payload, crc);
    REQUIRE_MESSAGE(r.ok(), (r ? "" : r.error().what()));
    return r->status;
  }
  void load(uint32_t engine, uint32_t in, uint32_t out, bool crc = false) {
    const auto model = test::make_test_model(test::TestModelSpec{{in}, {out}, 1, 0});
    REQUIRE(status_of(op(Command::SET_MODEL_SECONDARY), engine, 0, model, crc) == AISRV_STATUS_OKAY);
  }
  // The engine's log as the host's session reads it (shared lines and its own errors).
  std::string engine_log(uint32_t engine) {
    return session->session()->read_log(engine, server->engine(engine)->log(), 0, false);
  }
  // Where the host session's input 0 of engine 0 lives now.
  const void* input0() { return session->session()->input_storage(0, 0); }

  test::SeqpacketLink link;
  std::unique_ptr<server::Server> server;
  std::unique_ptr<phy::usb::UsbConnection> session;
  std::unique_ptr<client::usb::UsbHostLink> host;
  std::thread serving;
};

// Packets a transfer of `n` bytes takes: full packets, then a short one or a zero-length packet.
std::vector<size_t> transfer_packets(size_t n, size_t mps) {
  std::vector<size_t> p(n / mps, mps);
  p.push_back(n % mps);
  return p;
}

}  // namespace

TEST_CASE("worked example of docs/transport-usb.md: SET_INPUT_TENSOR of 1024 bytes at 512-byte packets") {
  Rig rig(512);
  rig.load(1, 1024, 1024);
  const auto data = pattern(1024, 1);
  rig.link.clear_trace();
  CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 1, 0, data, false) == AISRV_STATUS_OKAY);
  const auto out = rig.link.out_packets();
  REQUIRE(rig.link.out_sizes() == std::vector<size_t>{12, 512, 512, 0});
  CHECK(out[0] == std::vector<uint8_t>{0x83, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0});
  CHECK(rig.link.in_packets() == std::vector<std::vector<uint8_t>>{{0, 0, 0, 0}});

  // With the CRC flag: bit 31 of cmd; header, payload and CRC go as one transfer of 1040 bytes.
  rig.link.clear_trace();
  CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 1, 0, data, true) == AISRV_STATUS_OKAY);
  const auto crc_out = rig.link.out_packets();
  REQUIRE(rig.link.out_sizes() == std::vector<size_t>{512, 512, 16});
  const std::vector<uint8_t> header{0x83, 0, 0, 0x80, 1, 0, 0, 0, 0, 0, 0, 0};
  CHECK(std::equal(header.begin(), header.end(), crc_out[0].begin()));
  CHECK(std::equal(data.begin(), data.begin() + 500, crc_out[0].begin() + 12));
  uint32_t crc = pusb::crc32(0, header);
  crc = pusb::crc32(crc, data);
  CHECK(std::vector<uint8_t>(crc_out[2].end() - 4, crc_out[2].end()) ==
        std::vector<uint8_t>{static_cast<uint8_t>(crc), static_cast<uint8_t>(crc >> 8),
                             static_cast<uint8_t>(crc >> 16), static_cast<uint8_t>(crc >> 24)});

  // GET: the status word, then the payload ended by a zero-length packet (or by the trailer).
  rig.link.clear_trace();
  auto got = rig.call(op(Command::GET_INPUT_TENSOR), 1, 0, {}, false);
  REQUIRE(got.ok());
  CHECK(got->payload == data);
  CHECK(rig.link.out_sizes() == std::vector<size_t>{12});
  CHECK(rig.link.in_sizes() == std::vector<size_t>{4, 512, 512, 0});
  rig.link.clear_trace();
  got = rig.call(op(Command::GET_INPUT_TENSOR), 1, 0, {}, true);
  REQUIRE(got.ok());
  CHECK(got->payload == data);
  CHECK(rig.link.in_sizes() == std::vector<size_t>{4, 512, 512, 4});
}

TEST_CASE("zlib CRC-32 equals the protocol's table-free CRC-32") {
  const auto data = pattern(100000, 3);
  CHECK(pusb::crc32(0, data) == aisrv_crc32(0, data.data(), data.size()));
  CHECK(pusb::crc32(pusb::crc32(0, std::span(data).first(777)), std::span(data).subspan(777)) ==
        aisrv_crc32(0, data.data(), data.size()));
  CHECK(pusb::crc32(0, {}) == 0);
}

TEST_CASE("every payload length around packet multiples, both directions, with and without CRC") {
  for (size_t mps : {size_t{64}, size_t{512}}) {
    Rig rig(mps);
    std::vector<size_t> lengths;
    for (size_t k = 0; k <= 4; ++k)
      for (int d = -5; d <= 5; ++d)
        if (static_cast<long>(k * mps) + d >= 1) lengths.push_back(k * mps + d);
    // around the 256 KiB pieces both sides queue, and a transfer of several pieces
    for (size_t base : {size_t{256} << 10, size_t{1} << 20})
      for (int d : {-4, -1, 0, 1, 4}) lengths.push_back(base + d);
    // classic framing; one transfer without CRC (AISRV_CAP_USB_ONE_TRANSFER); one transfer with CRC
    for (auto [crc, one] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false}}) {
      rig.host->set_one_transfer(one);
      for (size_t n : lengths) {
        CAPTURE(mps);
        CAPTURE(crc);
        CAPTURE(one);
        CAPTURE(n);
        rig.load(0, static_cast<uint32_t>(n), static_cast<uint32_t>(n), crc);
        const auto data = pattern(n, static_cast<uint8_t>(n));
        rig.link.clear_trace();
        REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, data, crc) == AISRV_STATUS_OKAY);
        auto out = rig.link.out_sizes();
        auto expect = transfer_packets(n, mps);  // command packet, then the payload
        expect.insert(expect.begin(), 12);
        if (one) expect = transfer_packets(12 + n, mps);      // header and payload in one transfer
        if (crc) expect = transfer_packets(12 + n + 4, mps);  // header, payload and CRC in one transfer
        CHECK(out == expect);
        rig.link.clear_trace();
        auto back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc);
        REQUIRE(back.ok());
        CHECK(back->status == AISRV_STATUS_OKAY);
        CHECK(back->payload == data);
        auto in_expect = transfer_packets(n + (crc ? 4 : 0), mps);
        in_expect.insert(in_expect.begin(), 4);
        CHECK(rig.link.in_sizes() == in_expect);
      }
    }
    // Zero-length payloads: a SET without data is the command packet plus a zero-length packet (also with
    // one-transfer SETs: 12 bytes alone are a command packet).
    rig.host->set_one_transfer(true);
    rig.link.clear_trace();
    CHECK(rig.status_of(op(Command::START_INFER), 0, 0, {}, false) == AISRV_STATUS_OKAY);
    CHECK(rig.link.out_sizes() == std::vector<size_t>{12, 0});
    rig.host->set_one_transfer(false);
    rig.link.clear_trace();
    CHECK(rig.status_of(op(Command::START_INFER), 0, 0, {}, false) == AISRV_STATUS_OKAY);
    CHECK(rig.link.out_sizes() == std::vector<size_t>{12, 0});
    rig.link.clear_trace();
    CHECK(rig.status_of(op(Command::START_INFER), 0, 0, {}, true) == AISRV_STATUS_OKAY);
    CHECK(rig.link.out_sizes() == std::vector<size_t>{16});
  }
}

TEST_CASE("input tensors are received into a buffer the session adopts; other SETs and CRC checks unaffected") {
  // From the second SET_INPUT_TENSOR of one size (>= 64 KiB) on, the device receives that input into a buffer of its
  // own which the session takes as the tensor's storage (swapped, so the storage alternates).
  for (bool crc : {false, true}) {
    for (size_t n : {size_t{100000}, size_t{131072}}) {  // a short last packet; a multiple of the packet size (ZLP)
      CAPTURE(crc);
      CAPTURE(n);
      Rig rig(512);
      rig.load(0, static_cast<uint32_t>(n), 64, crc);
      std::vector<const void*> storage;
      for (uint8_t i = 0; i < 5; ++i) {
        const auto data = pattern(n, static_cast<uint8_t>(i * 31));
        REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, data, crc) == AISRV_STATUS_OKAY);
        auto back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc);
        REQUIRE(back.ok());
        CHECK(back->payload == data);
        storage.push_back(rig.input0());
      }
      CHECK(storage[3] != storage[2]);  // adopted: the storage changed with the SET
      CHECK(storage[4] != storage[3]);
      CHECK(storage[4] == storage[2]);  // and the old storage came back to the device for the next one
      // A damaged transfer into the adopted buffer is refused (CRC) and applies nothing.
      const auto before = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc)->payload;
      rig.link.corrupt_out(40);
      const uint32_t st = rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, pattern(n, 200), crc);
      if (crc) {
        CHECK(st == AISRV_STATUS_ERROR_CRC);
        CHECK(rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc)->payload == before);
      } else {
        CHECK(st == AISRV_STATUS_OKAY);  // without the trailer the damage passes, as everywhere
      }
      // A larger SET (a model) and inputs of another size still arrive whole; then the first size again.
      const uint32_t m = static_cast<uint32_t>(n + 70000);
      rig.load(0, m, 64, crc);
      for (uint8_t i = 0; i < 3; ++i) {
        const auto data = pattern(m, static_cast<uint8_t>(i + 90));
        REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, data, crc) == AISRV_STATUS_OKAY);
        CHECK(rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc)->payload == data);
      }
      rig.load(0, static_cast<uint32_t>(n), 64, crc);
      // Two bytes short: with CRC the trailer straddles the adopted buffer and the rest; the CRC still checks, the
      // interpreter refuses the length.
      const auto small = pattern(n - 2, 5);
      CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, small, crc) == AISRV_STATUS_ERROR_BAD_LENGTH);
      const auto data = pattern(n, 123);
      REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, data, crc) == AISRV_STATUS_OKAY);
      CHECK(rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc)->payload == data);
      // An inference loop from the start (START_INFER, an empty SET, between the inputs) adopts the inputs as well.
      Rig loop(512);
      loop.load(0, static_cast<uint32_t>(n), 64, crc);
      storage.clear();
      for (uint8_t i = 0; i < 4; ++i) {
        const auto in = pattern(n, static_cast<uint8_t>(i + 40));
        REQUIRE(loop.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, in, crc) == AISRV_STATUS_OKAY);
        REQUIRE(loop.status_of(op(Command::START_INFER), 0, 0, {}, crc) == AISRV_STATUS_OKAY);
        CHECK(loop.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, crc)->payload == in);
        storage.push_back(loop.input0());
      }
      CHECK(storage[1] == storage[0]);  // the first two inputs are copied: the size is not known to repeat yet
      CHECK(storage[2] != storage[1]);
      CHECK(storage[3] != storage[2]);
    }
  }
}

TEST_CASE("output tensors go on the bus straight from the session: packets, trailer, errors, CRC damage") {
  for (size_t mps : {size_t{64}, size_t{512}}) {
    Rig rig(mps);
    for (bool crc : {false, true}) {
      // (above 4 MiB the session declines the engine's bytes and the interpreter copies them: same bytes on the bus)
      std::vector<size_t> sizes{1, mps - 4, mps, mps + 1, 3 * mps, 70001};
      if (mps == 512) sizes.push_back((size_t{4} << 20) + 3);
      for (size_t n : sizes) {
        CAPTURE(mps);
        CAPTURE(crc);
        CAPTURE(n);
        rig.load(0, 16, static_cast<uint32_t>(n), crc);
        // No inference on this model yet: the status says why and no payload follows. After the first model, the
        // outputs of the previous one are refused as such (and dropped), then there are none.
        rig.link.clear_trace();
        auto none = rig.call(op(Command::GET_OUTPUT_TENSOR), 0, 0, {}, crc);
        REQUIRE(none.ok());
        const bool first = !crc && n == sizes.front();
        CHECK(none->status == (first ? AISRV_STATUS_ERROR_INFER_ERR : AISRV_STATUS_ERROR_MODEL_CHANGED));
        CHECK(none->payload.empty());
        CHECK(rig.call(op(Command::GET_OUTPUT_TENSOR), 0, 0, {}, crc)->status == AISRV_STATUS_ERROR_INFER_ERR);
        const auto in = pattern(16, static_cast<uint8_t>(n));
        REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, in, crc) == AISRV_STATUS_OKAY);
        REQUIRE(rig.status_of(op(Command::START_INFER), 0, 0, {}, crc) == AISRV_STATUS_OKAY);
        rig.link.clear_trace();
        auto out = rig.call(op(Command::GET_OUTPUT_TENSOR), 0, 0, {}, crc);
        REQUIRE(out.ok());
        CHECK(out->status == AISRV_STATUS_OKAY);
        CHECK(out->payload == test::expected_output(in, static_cast<uint32_t>(n), 0));
        auto expect = transfer_packets(n + (crc ? 4 : 0), mps);
        expect.insert(expect.begin(), 4);
        CHECK(rig.link.in_sizes() == expect);
      }
    }
    // A damaged packet of an answer sent from the tensor is caught by the host's CRC check.
    rig.link.corrupt_in(2);
    auto bad = rig.call(op(Command::GET_OUTPUT_TENSOR), 0, 0, {}, true);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code == Errc::crc_error);
    CHECK(rig.call(op(Command::GET_OUTPUT_TENSOR), 0, 0, {}, true).ok());
  }
}

TEST_CASE("a CRC mismatch on a SET answers ERROR_CRC and applies nothing; without CRC the damage passes") {
  Rig rig(64);
  rig.load(0, 300, 300);
  const auto good = pattern(300, 9);
  REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, good, true) == AISRV_STATUS_OKAY);
  auto other = pattern(300, 77);
  rig.link.corrupt_out(2);  // header + data, data, data <- this one
  CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, other, true) == AISRV_STATUS_ERROR_CRC);
  auto back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  REQUIRE(back.ok());
  CHECK(back->payload == good);  // unchanged
  CHECK(rig.engine_log(0).find("CRC mismatch over 300 payload bytes") != std::string::npos);
  auto word = rig.call(op(Command::GET_STATUS), 0, 0, {}, true);
  REQUIRE(word.ok());
  CHECK((protocol::decode_u32(word->payload).value() & AISRV_STATUS_ERROR_CRC) != 0);
  // A damaged command packet is caught too (the CRC covers it): engine 0 -> 1 would otherwise go unnoticed.
  rig.link.corrupt_out(0);
  CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, other, true) != AISRV_STATUS_OKAY);
  back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  CHECK(back->payload == good);
  // The same damage without the trailer is applied silently: this is what the CRC is for.
  rig.link.corrupt_out(1);
  CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, other, false) == AISRV_STATUS_OKAY);
  back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, false);
  CHECK(back->payload != other);
  CHECK(back->payload != good);
}

TEST_CASE("the device takes a SET as command packet + data, or as one transfer with or without the CRC flag") {
  Rig rig(64);
  rig.load(0, 100, 100);
  const auto data = pattern(100, 6);
  std::array<uint8_t, 12> packet{};
  pusb::encode_command_packet(protocol::Header{op(Command::SET_INPUT_TENSOR), 0, 0}, true, packet);
  std::vector<uint8_t> body(data);
  const uint32_t crc = pusb::crc32(pusb::crc32(0, packet), data);
  for (int i = 0; i < 4; ++i) body.push_back(static_cast<uint8_t>(crc >> (8 * i)));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  auto& ep = rig.link.host();
  REQUIRE(ep.send(packet, deadline).ok());
  REQUIRE(ep.send(body, deadline).ok());  // 104 bytes: 64 + 40, the short packet ends it
  std::vector<uint8_t> status;
  auto r = ep.receive(64, [&](std::span<const uint8_t> p) { status.assign(p.begin(), p.end()); }, deadline);
  REQUIRE(r.ok());
  CHECK(status == std::vector<uint8_t>{0, 0, 0, 0});
  auto back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  REQUIRE(back.ok());
  CHECK(back->payload == data);
  // A SET's header and payload as one transfer without the CRC flag (AISRV_CAP_USB_ONE_TRANSFER) is taken too...
  std::vector<uint8_t> combined(packet.begin(), packet.end());
  combined[3] = 0;  // flag off
  const auto other = pattern(100, 60);
  combined.insert(combined.end(), other.begin(), other.end());
  REQUIRE(ep.send(combined, deadline).ok());
  status.clear();
  r = ep.receive(64, [&](std::span<const uint8_t> p) { status.assign(p.begin(), p.end()); }, deadline);
  REQUIRE(r.ok());
  CHECK(status == std::vector<uint8_t>{0, 0, 0, 0});
  CHECK(rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, false)->payload == other);
  // ...but a GET's command packet with anything behind it is a framing error.
  std::array<uint8_t, 12> get_packet{};
  pusb::encode_command_packet(protocol::Header{op(Command::GET_INPUT_TENSOR), 0, 0}, false, get_packet);
  std::vector<uint8_t> long_get(get_packet.begin(), get_packet.end());
  long_get.push_back(1);
  REQUIRE(ep.send(long_get, deadline).ok());
  r = ep.receive(64, {}, deadline);
  CHECK(r.io == client::usb::Io::stalled);
  REQUIRE(ep.clear_halts().ok());
  CHECK(rig.session->last_error().message.find("only a SET may carry its payload") != std::string::npos);
  CHECK(rig.status_of(op(Command::HELLO), 0, 0, {}, true) == AISRV_STATUS_OKAY);
}

TEST_CASE("a CRC mismatch on a GET answer is a crc_error on the host") {
  Rig rig(64);
  rig.load(0, 200, 200);
  REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, pattern(200, 4), true) == AISRV_STATUS_OKAY);
  rig.link.corrupt_in(2);  // status word, packet 1, packet 2 <- this one
  auto r = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::crc_error);
  CHECK(r.error().message.find("corrupt") != std::string::npos);
  // the link is still in step
  r = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  REQUIRE(r.ok());
  CHECK(r->payload == pattern(200, 4));
}

TEST_CASE("malformed command packets stall both endpoints; the host reads why and the link resumes") {
  for (size_t size : {size_t{11}, size_t{13}, size_t{0}, size_t{64}}) {
    CAPTURE(size);
    Rig rig(64);
    const std::vector<uint8_t> bad(size, 0x01);
    REQUIRE(rig.link.raw_out(bad));
    if (size == 64) {
      // A full packet does not end the transfer: the device reads on, then stalls at the next short packet.
      REQUIRE(rig.link.raw_out(std::vector<uint8_t>(5, 0)));
    }
    for (int i = 0; i < 500 && rig.link.halts() == 0; ++i) std::this_thread::sleep_for(2ms);
    REQUIRE(rig.link.halts() == 1);
    auto& ep = rig.link.host();
    auto r = ep.receive(64, {}, std::chrono::steady_clock::now() + 1s);
    CHECK(r.io == client::usb::Io::stalled);
    CHECK(ep.clear_halts().ok());
    std::vector<uint8_t> answer;
    REQUIRE(ep.control_in(static_cast<uint8_t>(pusb::VendorRequest::last_error), pusb::kLastErrorMaxSize, answer).ok());
    auto le = pusb::decode_last_error(answer);
    REQUIRE(le.ok());
    CHECK(le->status == AISRV_STATUS_ERROR_BAD_CMD);
    CHECK(le->stalls == 1);
    CHECK(le->message.find("command packet of") != std::string::npos);
    CHECK(le->message.find("exactly 12 bytes") != std::string::npos);
    // the server log says it too
    CHECK(rig.session->session()->read_log(rig.server->engine_count(), rig.server->log(), 0, false).find("command packet of") != std::string::npos);
    CHECK(rig.status_of(op(Command::HELLO), 0, 0, {}, false) == AISRV_STATUS_OKAY);
  }
}

TEST_CASE("a command for no engine or with an unknown opcode stalls; the host turns it into the typed error") {
  Rig rig(512);
  auto r = rig.call(op(Command::GET_SPEC), 7, 0, {}, true);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::bad_engine);
  CHECK(r.error().message.find("engine 7 does not exist") != std::string::npos);
  r = rig.call(0x42, 0, 0, {}, false);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::bad_command);
  CHECK(r.error().message.find("unknown opcode 0x42") != std::string::npos);
  // A SET with an unknown opcode: its data phase is read, then the device stalls.
  const std::vector<uint8_t> junk(700, 0x33);
  r = rig.call(0xFE, 0, 0, junk, true);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::bad_command);
  CHECK(rig.session->last_error().stalls == 3);
  CHECK(rig.status_of(op(Command::HELLO), 0, 0, {}, true) == AISRV_STATUS_OKAY);
  // Errors that are not framing errors are plain statuses, the link does not stall.
  CHECK(rig.status_of(op(Command::START_INFER), 0, 0, {}, true) == AISRV_STATUS_ERROR_NO_MODEL);
  CHECK(rig.link.halts() == 3);
}

TEST_CASE("data above the limit stalls at the limit; exactly the limit is accepted") {
  Rig rig(64, 4096);
  const auto at_limit = pattern(4096, 1);
  // exactly the limit (a multiple of 64: ended by a zero-length packet), with and without the trailer
  CHECK(rig.status_of(op(Command::SET_MODEL_SECONDARY), 0, 0, at_limit, false) == AISRV_STATUS_ERROR_MODEL_ERR);
  CHECK(rig.status_of(op(Command::SET_MODEL_SECONDARY), 0, 0, at_limit, true) == AISRV_STATUS_ERROR_MODEL_ERR);
  CHECK(rig.link.halts() == 0);
  rig.load(0, 8, 8);
  for (size_t n : {size_t{4097}, size_t{4160}, size_t{64} << 10}) {
    CAPTURE(n);
    auto r = rig.call(op(Command::SET_MODEL_SECONDARY), 0, 0, pattern(n, 2), n % 2 == 0);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::bad_length);
    CHECK(r.error().message.find("exceeds the limit") != std::string::npos);
    // nothing applied: the model loaded before is still there
    CHECK(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, pattern(8, 0), false) == AISRV_STATUS_OKAY);
  }
}

TEST_CASE("a GET with a payload or an opcode using bit 31 is refused before anything is sent") {
  Rig rig(64);
  const std::vector<uint8_t> junk{1, 2, 3};
  rig.link.clear_trace();
  auto r = rig.call(op(Command::GET_SPEC), 0, 0, junk, false);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::bad_length);
  r = rig.call(0x80000001u, 0, 0, {}, false);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::invalid_argument);
  CHECK(rig.link.out_sizes().empty());
}

TEST_CASE("a transfer abandoned half way is dropped by a link reset; the next command starts clean") {
  Rig rig(64);
  rig.load(0, 4096, 4096);
  const auto good = pattern(4096, 5);
  REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, good, true) == AISRV_STATUS_OKAY);
  auto& ep = rig.link.host();
  const auto deadline = std::chrono::steady_clock::now() + 5s;

  SUBCASE("SET cut off in its data phase") {
    std::array<uint8_t, 12> packet{};
    pusb::encode_command_packet(protocol::Header{op(Command::SET_INPUT_TENSOR), 0, 0}, false, packet);
    REQUIRE(ep.send(packet, deadline).ok());
    const auto other = pattern(4096, 99);
    REQUIRE(ep.send(std::span(other).first(2048), deadline).ok());  // full packets only: the transfer goes on
  }
  SUBCASE("GET whose answer is read only in part") {
    std::array<uint8_t, 12> packet{};
    pusb::encode_command_packet(protocol::Header{op(Command::GET_INPUT_TENSOR), 0, 0}, false, packet);
    REQUIRE(ep.send(packet, deadline).ok());
    size_t seen = 0;
    auto r = ep.receive(64, [&](std::span<const uint8_t> p) { seen += p.size(); }, deadline);  // the status
    REQUIRE(r.ok());
    CHECK(seen == 4);
    r = ep.receive(640, {}, deadline);  // ten packets of the answer, then the host gives up
    CHECK(!r.ended);
  }
  REQUIRE(rig.host->reset().ok());
  CHECK(rig.status_of(op(Command::HELLO), 0, 0, {}, true) == AISRV_STATUS_OKAY);
  auto back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  REQUIRE(back.ok());
  CHECK(back->payload == good);
}

TEST_CASE("cancel and timeout abandon the command, reset the link and leave the state unchanged") {
  Rig rig(64);
  const size_t n = 2u << 20;  // 32768 packets: long enough to interrupt
  rig.load(0, static_cast<uint32_t>(n), 16);
  const auto good = pattern(n, 1);
  REQUIRE(rig.status_of(op(Command::SET_INPUT_TENSOR), 0, 0, good, true) == AISRV_STATUS_OKAY);
  const auto other = pattern(n, 2);

  std::thread canceller([&] {
    std::this_thread::sleep_for(30ms);
    rig.link.cancel_host();
  });
  auto r = rig.call(op(Command::SET_INPUT_TENSOR), 0, 0, other, true);
  canceller.join();
  rig.link.uncancel_host();
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::cancelled);

  r = rig.call(op(Command::SET_INPUT_TENSOR), 0, 0, other, true, 20ms);
  REQUIRE(!r.ok());
  CHECK(r.error().code == Errc::timeout);

  CHECK(rig.status_of(op(Command::HELLO), 0, 0, {}, true) == AISRV_STATUS_OKAY);
  auto back = rig.call(op(Command::GET_INPUT_TENSOR), 0, 0, {}, true);
  REQUIRE(back.ok());
  CHECK(back->payload == good);
}

TEST_CASE("the client library over the USB framing: handshake, typed errors with the server's reason") {
  Rig rig(512);
  // A HostTransport over the test link, as UsbTransport is over libusb.
  struct LinkTransport final : client::HostTransport {
    explicit LinkTransport(Rig& r) : rig(r) {}
    Status transact(const protocol::Header& h, std::span<const uint8_t> p, protocol::Response& resp) override {
      return rig.host->transact(h, p, resp, crc, std::chrono::steady_clock::now() + 10s);
    }
    std::string describe() const override { return "seqpacket"; }
    void negotiated(const protocol::VersionInfo& v) override { crc = (v.capabilities & AISRV_CAP_CRC32) != 0; }
    Rig& rig;
    bool crc = false;
  };
  auto transport = std::make_unique<LinkTransport>(rig);
  auto* t = transport.get();
  client::Client c(std::move(transport));
  REQUIRE(c.handshake().ok());
  CHECK(t->crc);
  CHECK(c.server_version().engines == 2);
  const auto model = test::make_test_model(test::TestModelSpec{{16}, {16}, 2, 0});
  REQUIRE(c.load_model(0, model).ok());
  auto st = c.set_input(0, 0, pattern(17, 0));
  REQUIRE(!st.ok());
  CHECK(st.error().code == Errc::bad_length);
  CHECK(st.error().message.find("16") != std::string::npos);  // the server's log line, fetched over USB
  REQUIRE(c.set_input(0, 0, pattern(16, 0)).ok());
  REQUIRE(c.start_inference(0).ok());
  auto out = c.get_output(0, 0);
  REQUIRE(out.ok());
  CHECK(*out == test::expected_output(pattern(16, 0), 16, 0));
  // Into a buffer the caller keeps: its storage is reused from one call to the next; an error leaves it empty.
  std::vector<uint8_t> buf;
  buf.reserve(64);
  const uint8_t* storage = buf.data();
  REQUIRE(c.get_output(0, 0, buf).ok());
  CHECK(buf == *out);
  CHECK(buf.data() == storage);
  REQUIRE(c.get_output(0, 0, buf).ok());
  CHECK(buf == *out);
  auto missing = c.get_output(0, 3, buf);
  REQUIRE(!missing.ok());
  CHECK(missing.error().code == Errc::bad_tensor);
  CHECK(buf.empty());
  auto e = c.spec(5);
  REQUIRE(!e.ok());
  CHECK(e.error().code == Errc::bad_engine);
  CHECK(c.hello().ok());
}

TEST_CASE("last-error record codec") {
  pusb::LastError e{AISRV_STATUS_ERROR_BAD_LENGTH, 3, "SET_INPUT_TENSOR: too long"};
  auto bytes = pusb::encode_last_error(e, 64);
  auto d = pusb::decode_last_error(bytes);
  REQUIRE(d.ok());
  CHECK(d->status == e.status);
  CHECK(d->stalls == 3);
  CHECK(d->message == e.message);
  bytes = pusb::encode_last_error(e, 14);  // truncated to fit wLength
  CHECK(bytes.size() == 14);
  CHECK(pusb::decode_last_error(bytes)->message == "SET_");
  bytes.pop_back();
  CHECK(!pusb::decode_last_error(bytes).ok());
}
