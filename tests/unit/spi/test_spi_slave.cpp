// aisrv tests — the slave end of the SPI link (phy/spi LinkSlave) driven frame by frame, without ports or threads:
// transfer assembly, duplicates, gaps, replies one transaction behind, answers read in chunks, and what happens to
// a half-received request (never applied; discarded by a new transfer, a SYNC or the timeout).
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "aisrv/phy/spi_link_slave.hpp"

using namespace aisrv;
using namespace aisrv::phy::spi;

namespace {

struct Executed {
  protocol::Header header;
  std::vector<uint8_t> payload;
};

// A LinkSlave whose executor records each request and answers `answer` (or holds it until release()).
class Harness {
 public:
  explicit Harness(LinkSlaveOptions o = {}, bool hold = false) : hold_(hold) {
    o.boot = 0x11223344;
    slave_ = std::make_unique<LinkSlave>(
        o,
        [this](const protocol::Request& req, protocol::Response& resp, std::function<void()> done) {
          executed.push_back({req.header, {req.payload.begin(), req.payload.end()}});
          resp.status = status;
          resp.payload = answer;
          if (hold_) {
            held = std::move(done);
          } else {
            done();
          }
        },
        [this](const std::string& line) { log.push_back(line); });
  }

  // One transaction carrying `frame` (padded with filler to `clocked` bytes when larger); returns the reply the
  // slave armed for the next transaction.
  aisrv_spi_reply_t send(aisrv_spi_request_t h, const std::vector<uint8_t>& payload = {}, size_t clocked = 0,
                         Clock::time_point at = Clock::now()) {
    if (h.seq == 0) h.seq = next_seq_++ % 200 + 1;  // a master's seq changes with every transaction
    std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + h.length);
    aisrv_spi_build_request(&h, payload.data(), frame.data());
    if (clocked > frame.size()) frame.resize(clocked, AISRV_SPI_FILLER);
    return raw(frame, at);
  }
  aisrv_spi_reply_t raw(std::vector<uint8_t> bytes, Clock::time_point at = Clock::now()) {
    slave_->on_transaction(bytes, bytes.size(), at);
    return reply();
  }
  aisrv_spi_reply_t reply() {
    aisrv_spi_reply_t r{};
    const auto bytes = slave_->reply();
    REQUIRE(aisrv_spi_parse_reply(bytes.data(), bytes.size(), 65535, &r, &answer_bytes) == AISRV_SPI_E_NONE);
    last_answer.assign(answer_bytes, answer_bytes + r.length);
    return r;
  }
  LinkSlave& slave() { return *slave_; }

  std::vector<Executed> executed;
  std::vector<std::string> log;
  std::vector<uint8_t> answer;
  uint32_t status = AISRV_STATUS_OKAY;
  std::function<void()> held;
  std::vector<uint8_t> last_answer;

 private:
  bool hold_;
  unsigned next_seq_ = 0;
  const uint8_t* answer_bytes = nullptr;
  std::unique_ptr<LinkSlave> slave_;
};

aisrv_spi_request_t frame_of(uint8_t type, uint16_t xfer, uint32_t cmd, uint32_t total, uint32_t offset,
                             uint16_t length, uint16_t want = 0) {
  aisrv_spi_request_t r{};
  r.type = type;
  r.xfer = xfer;
  r.cmd = cmd;
  r.engine = 1;
  r.tensor = 0;
  r.total = total;
  r.offset = offset;
  r.length = length;
  r.want = want;
  return r;
}

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 13);
  return v;
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& v, size_t at, size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + n)};
}

constexpr uint32_t kSetInput = AISRV_CMD_SET_INPUT_TENSOR;
constexpr uint32_t kGetOutput = AISRV_CMD_GET_OUTPUT_TENSOR;

}  // namespace

TEST_CASE("idle slave: the first reply is an idle status with the frame size and boot id") {
  Harness h;
  auto r = h.reply();
  CHECK(r.state == 0);
  CHECK(r.frame == AISRV_SPI_DEFAULT_FRAME);
  CHECK(r.boot == 0x11223344);
}

TEST_CASE("a request in three chunks reaches the interpreter once, complete, after the last chunk") {
  Harness h;
  const uint32_t chunk = aisrv_spi_chunk_size(AISRV_SPI_DEFAULT_FRAME);
  const uint32_t total = 2 * chunk + 100;
  const auto data = bytes(total, 3);
  auto r = h.send(frame_of(AISRV_SPI_BEGIN, 7, kSetInput, total, 0, static_cast<uint16_t>(chunk)), slice(data, 0, chunk));
  CHECK(r.state == AISRV_SPI_STATE_RECEIVING);
  CHECK(r.xfer == 7);
  CHECK(r.offset == chunk);
  CHECK(r.total == total);
  CHECK(h.executed.empty());
  r = h.send(frame_of(AISRV_SPI_DATA, 7, kSetInput, total, chunk, static_cast<uint16_t>(chunk)), slice(data, chunk, chunk));
  CHECK(r.offset == 2 * chunk);
  CHECK(h.executed.empty());
  r = h.send(frame_of(AISRV_SPI_DATA, 7, kSetInput, total, 2 * chunk, 100), slice(data, 2 * chunk, 100));
  REQUIRE(h.executed.size() == 1);
  CHECK(h.executed[0].header.cmd == kSetInput);
  CHECK(h.executed[0].header.engine == 1);
  CHECK(h.executed[0].payload == data);
  CHECK(r.state == AISRV_SPI_STATE_READY);
  CHECK(r.status == AISRV_STATUS_OKAY);
  CHECK(r.total == 0);
  CHECK(h.slave().stats().commands == 1);
}

TEST_CASE("duplicates are acknowledged and ignored, gaps and overlaps refused, nothing corrupts the transfer") {
  Harness h;
  const uint32_t total = 300;
  const auto data = bytes(total, 9);
  h.send(frame_of(AISRV_SPI_BEGIN, 1, kSetInput, total, 0, 100), slice(data, 0, 100));
  // the same BEGIN again (the master missed our reply)
  auto r = h.send(frame_of(AISRV_SPI_BEGIN, 1, kSetInput, total, 0, 100), slice(data, 0, 100));
  CHECK(r.error == AISRV_SPI_E_NONE);
  CHECK(r.offset == 100);
  // a gap: chunk 2 before chunk 1
  r = h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 200, 100), slice(data, 200, 100));
  CHECK((r.state & AISRV_SPI_STATE_REJECTED));
  CHECK(r.error == AISRV_SPI_E_GAP);
  CHECK(r.offset == 100);
  // an overlap that is not a duplicate
  r = h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 50, 100), slice(data, 50, 100));
  CHECK(r.error == AISRV_SPI_E_BAD_OFFSET);
  // a chunk of another transfer, and one whose header differs from its BEGIN
  r = h.send(frame_of(AISRV_SPI_DATA, 2, kSetInput, total, 100, 100), slice(data, 100, 100));
  CHECK(r.error == AISRV_SPI_E_NO_TRANSFER);
  r = h.send(frame_of(AISRV_SPI_DATA, 1, kGetOutput, total, 100, 100), slice(data, 100, 100));
  CHECK(r.error == AISRV_SPI_E_MISMATCH);
  // past the end
  r = h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 250, 100), slice(data, 0, 100));
  CHECK(r.error == AISRV_SPI_E_BAD_OFFSET);
  h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 100, 100), slice(data, 100, 100));
  r = h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 100, 100), slice(data, 100, 100));  // duplicate
  CHECK(r.error == AISRV_SPI_E_NONE);
  CHECK(r.offset == 200);
  h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 200, 100), slice(data, 200, 100));
  REQUIRE(h.executed.size() == 1);
  CHECK(h.executed[0].payload == data);
  // a late duplicate of any chunk, and of the BEGIN, after execution: never a second execution
  r = h.send(frame_of(AISRV_SPI_DATA, 1, kSetInput, total, 100, 100), slice(data, 100, 100));
  CHECK(r.error == AISRV_SPI_E_NONE);
  r = h.send(frame_of(AISRV_SPI_BEGIN, 1, kSetInput, total, 0, 100), slice(data, 0, 100));
  CHECK(r.error == AISRV_SPI_E_NONE);
  CHECK(r.state == AISRV_SPI_STATE_READY);
  CHECK(h.executed.size() == 1);
  CHECK(h.slave().stats().by_error[AISRV_SPI_E_GAP] == 1);
}

TEST_CASE("corrupted frames are rejected with the reason and change nothing") {
  Harness h;
  const auto data = bytes(100, 1);
  h.send(frame_of(AISRV_SPI_BEGIN, 3, kSetInput, 200, 0, 100), data);
  std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + 100);
  auto d = frame_of(AISRV_SPI_DATA, 3, kSetInput, 200, 100, 100);
  d.seq = 42;
  aisrv_spi_build_request(&d, data.data(), frame.data());
  frame[50] ^= 0x10;
  auto r = h.raw(frame);
  CHECK(r.error == AISRV_SPI_E_BAD_CRC);
  CHECK(r.seq == 42);  // the reply says which frame it refused
  CHECK(r.state == (AISRV_SPI_STATE_RECEIVING | AISRV_SPI_STATE_REJECTED));
  CHECK(r.offset == 100);
  CHECK(h.slave().stats().crc_errors == 1);
  // the CS window ended early (cut mid-frame)
  frame[50] ^= 0x10;
  frame.resize(60);
  r = h.raw(frame);
  CHECK(r.error == AISRV_SPI_E_BAD_LENGTH);
  // only filler (the master clocked to read, or nothing is connected)
  r = h.raw(std::vector<uint8_t>(40, AISRV_SPI_FILLER));
  CHECK(r.error == AISRV_SPI_E_NO_FRAME);
  CHECK(h.executed.empty());
  CHECK(r.offset == 100);
}

TEST_CASE("a new transfer discards a half-received one: logged, never executed") {
  Harness h;
  h.send(frame_of(AISRV_SPI_BEGIN, 1, AISRV_CMD_SET_MODEL_PRIMARY, 1000, 0, 400), bytes(400, 1));
  auto r = h.send(frame_of(AISRV_SPI_BEGIN, 2, AISRV_CMD_HELLO, 0, 0, 0));
  REQUIRE(h.executed.size() == 1);
  CHECK(h.executed[0].header.cmd == AISRV_CMD_HELLO);
  CHECK(r.xfer == 2);
  CHECK(r.state == AISRV_SPI_STATE_READY);
  REQUIRE(h.log.size() == 1);
  CHECK(h.log[0].find("SET_MODEL_PRIMARY") != std::string::npos);
  CHECK(h.log[0].find("400 of 1000 bytes") != std::string::npos);
  CHECK(h.log[0].find("a new transfer began") != std::string::npos);
  // the rest of the old transfer is refused
  r = h.send(frame_of(AISRV_SPI_DATA, 1, AISRV_CMD_SET_MODEL_PRIMARY, 1000, 400, 400), bytes(400, 2));
  CHECK(r.error == AISRV_SPI_E_NO_TRANSFER);
  CHECK(h.slave().stats().discarded == 1);
}

TEST_CASE("SYNC discards a half-received transfer and resets the link") {
  Harness h;
  h.send(frame_of(AISRV_SPI_BEGIN, 1, kSetInput, 1000, 0, 400), bytes(400, 1));
  aisrv_spi_request_t s{};
  s.type = AISRV_SPI_SYNC;
  s.total = 4092;
  auto r = h.send(s);
  CHECK(r.state == 0);
  CHECK(r.error == AISRV_SPI_E_NONE);
  CHECK(h.executed.empty());
  REQUIRE(h.log.size() == 1);
  CHECK(h.log[0].find("SYNC") != std::string::npos);
  s.total = 32;  // no master can work with frames this small
  r = h.send(s);
  CHECK(r.error == AISRV_SPI_E_BAD_FRAME_SIZE);
}

TEST_CASE("a transfer idle past the timeout is discarded; its late chunks get TIMEOUT") {
  LinkSlaveOptions o;
  o.transfer_timeout = std::chrono::milliseconds(100);
  Harness h(o);
  const auto t0 = Clock::now();
  h.send(frame_of(AISRV_SPI_BEGIN, 5, kSetInput, 1000, 0, 400), bytes(400, 1), 0, t0);
  CHECK_FALSE(h.slave().on_idle(t0 + std::chrono::milliseconds(50)));
  CHECK(h.slave().on_idle(t0 + std::chrono::milliseconds(150)));
  CHECK(h.reply().state == 0);
  REQUIRE(h.log.size() == 1);
  CHECK(h.log[0].find("no frame for 100 ms") != std::string::npos);
  auto r = h.send(frame_of(AISRV_SPI_DATA, 5, kSetInput, 1000, 400, 400), bytes(400, 2), 0,
                  t0 + std::chrono::milliseconds(160));
  CHECK(r.error == AISRV_SPI_E_TIMEOUT);
  CHECK(h.executed.empty());
  // the timeout is also found when the next frame comes late (ports that cannot wake up)
  Harness late(o);
  late.send(frame_of(AISRV_SPI_BEGIN, 6, kSetInput, 1000, 0, 400), bytes(400, 1), 0, t0);
  r = late.send(frame_of(AISRV_SPI_DATA, 6, kSetInput, 1000, 400, 400), bytes(400, 2), 0,
                t0 + std::chrono::milliseconds(500));
  CHECK(r.error == AISRV_SPI_E_TIMEOUT);
  CHECK(late.executed.empty());
}

TEST_CASE("BUSY while the command runs; the answer is read in chunks, in any order, as often as asked") {
  LinkSlaveOptions o;
  o.max_frame = 100;  // chunk 64
  Harness h(o, /*hold=*/true);
  h.answer = bytes(150, 5);
  auto r = h.send(frame_of(AISRV_SPI_BEGIN, 9, kGetOutput, 0, 0, 0, 64));
  CHECK(r.state == AISRV_SPI_STATE_BUSY);
  CHECK(r.length == 0);
  auto poll = frame_of(AISRV_SPI_POLL, 9, 0, 0, 0, 0, 64);
  r = h.send(poll);
  CHECK(r.state == AISRV_SPI_STATE_BUSY);
  h.held();  // the engine finishes
  r = h.send(poll);
  CHECK(r.state == AISRV_SPI_STATE_READY);
  CHECK(r.total == 150);
  CHECK(r.offset == 0);
  CHECK(r.length == 64);
  CHECK(h.last_answer == slice(h.answer, 0, 64));
  poll.offset = 128;
  r = h.send(poll);
  CHECK(r.length == 22);  // the rest only
  CHECK(h.last_answer == slice(h.answer, 128, 22));
  poll.offset = 64;
  r = h.send(poll);
  CHECK(h.last_answer == slice(h.answer, 64, 64));
  poll.offset = 150;  // at the end: nothing more
  r = h.send(poll);
  CHECK(r.length == 0);
  CHECK(r.error == AISRV_SPI_E_NONE);
  poll.want = 0;  // a plain status transaction
  r = h.send(poll);
  CHECK(r.length == 0);
  CHECK(r.state == AISRV_SPI_STATE_READY);
  // another transfer's POLL is refused
  r = h.send(frame_of(AISRV_SPI_POLL, 8, 0, 0, 0, 0, 64));
  CHECK(r.error == AISRV_SPI_E_NO_TRANSFER);
  // transfer 0 is a plain status poll: accepted, it shows the current transfer's state
  r = h.send(frame_of(AISRV_SPI_POLL, 0, 0, 0, 0, 0, 0));
  CHECK(r.error == AISRV_SPI_E_NONE);
  CHECK(r.xfer == 9);
  CHECK(r.state == AISRV_SPI_STATE_READY);
}

TEST_CASE("a request above the payload limit is answered BAD_LENGTH from the header alone") {
  LinkSlaveOptions o;
  o.max_payload = 1000;
  Harness h(o);
  auto r = h.send(frame_of(AISRV_SPI_BEGIN, 4, AISRV_CMD_SET_MODEL_PRIMARY, 1001, 0, 100), bytes(100, 0));
  CHECK(r.state == AISRV_SPI_STATE_READY);
  CHECK(r.status == AISRV_STATUS_ERROR_BAD_LENGTH);
  CHECK(h.executed.empty());
  REQUIRE(h.log.size() == 1);
  CHECK(h.log[0].find("1001 bytes is above the limit of 1000") != std::string::npos);
}

TEST_CASE("a fixed-size link refuses transactions of any other size") {
  LinkSlaveOptions o;
  o.max_frame = 128;
  o.fixed = true;
  Harness h(o);
  CHECK((h.reply().state & AISRV_SPI_STATE_FIXED));
  auto r = h.send(frame_of(AISRV_SPI_BEGIN, 1, AISRV_CMD_HELLO, 0, 0, 0));  // 36 bytes
  CHECK(r.error == AISRV_SPI_E_WRONG_SIZE);
  CHECK(h.executed.empty());
  r = h.send(frame_of(AISRV_SPI_BEGIN, 1, AISRV_CMD_HELLO, 0, 0, 0), {}, 128);
  CHECK(r.error == AISRV_SPI_E_NONE);
  CHECK(h.executed.size() == 1);
  aisrv_spi_request_t s{};
  s.type = AISRV_SPI_SYNC;
  s.total = 100;  // this master cannot clock our frames
  r = h.send(s, {}, 128);
  CHECK(r.error == AISRV_SPI_E_BAD_FRAME_SIZE);
}

TEST_CASE("zero clocks change nothing") {
  Harness h;
  const auto before = h.reply();
  h.slave().on_transaction({}, 0);
  CHECK(h.slave().stats().transactions == 0);
  CHECK(h.reply().seq == before.seq);
}

TEST_CASE("hostile transactions: random bytes, truncated and mutated frames never break the slave") {
  LinkSlaveOptions o;
  o.max_frame = 512;
  o.max_payload = 100000;
  Harness h(o);
  std::mt19937 rng(77);
  const auto pick = [&](uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); };
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes;
    if (pick(3) == 0) {
      bytes.resize(pick(700));  // noise of any length, including longer than the receive buffer
      for (auto& b : bytes) b = static_cast<uint8_t>(pick(256));
    } else {
      // a well-formed frame with random fields, then possibly damaged
      auto f = frame_of(static_cast<uint8_t>(1 + pick(4)), static_cast<uint16_t>(pick(4)),
                        pick(2) ? kSetInput : kGetOutput, pick(3) ? pick(2000) : pick(0xFFFFFFFFu),
                        pick(2) ? pick(2000) : pick(0xFFFFFFFFu), static_cast<uint16_t>(pick(480)),
                        static_cast<uint16_t>(pick(600)));
      if (f.length > f.total && pick(2)) f.length = static_cast<uint16_t>(f.total);
      f.seq = static_cast<uint8_t>(i);
      std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + f.length);
      const auto payload = ::bytes(f.length, static_cast<uint8_t>(i));
      aisrv_spi_build_request(&f, payload.data(), frame.data());
      if (pick(4) == 0) frame[pick(static_cast<uint32_t>(frame.size()))] ^= static_cast<uint8_t>(1 + pick(255));
      if (pick(4) == 0) frame.resize(pick(static_cast<uint32_t>(frame.size()) + 1));
      bytes = std::move(frame);
    }
    const size_t clocked = bytes.size();
    bytes.resize(std::min<size_t>(bytes.size(), h.slave().receive_capacity()));
    h.slave().on_transaction(bytes, clocked);
    const auto reply = h.slave().reply();
    aisrv_spi_reply_t r{};
    REQUIRE(aisrv_spi_parse_reply(reply.data(), reply.size(), 512, &r, nullptr) == AISRV_SPI_E_NONE);
    REQUIRE(reply.size() <= o.max_frame);
    if (r.state & AISRV_SPI_STATE_RECEIVING) REQUIRE(r.offset <= r.total);
  }
  CHECK(h.slave().stats().transactions > 19000);
  CHECK(h.slave().stats().rejected > 1000);
  // nothing above the payload limit reached the interpreter
  for (const auto& e : h.executed) CHECK(e.payload.size() <= 100000);
}

TEST_CASE("the previous frame handed back again (a controller's stale buffer) is ignored") {
  Harness h;
  std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD);
  auto b = frame_of(AISRV_SPI_BEGIN, 1, AISRV_CMD_START_INFER, 0, 0, 0);
  b.seq = 7;
  aisrv_spi_build_request(&b, nullptr, frame.data());
  auto r = h.raw(frame);
  CHECK(h.executed.size() == 1);
  r = h.raw(frame);  // the same bytes, same seq: not a new frame
  CHECK(h.executed.size() == 1);
  CHECK(r.seq == 7);
  CHECK(h.slave().stats().replays == 1);
  // a SYNC replayed after the next command would otherwise wipe that command's answer
  aisrv_spi_request_t s{};
  s.type = AISRV_SPI_SYNC;
  s.total = 4092;
  s.seq = 8;
  h.send(s);
  h.send(s);
  CHECK(h.slave().stats().replays == 2);
}
