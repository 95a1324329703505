// aisrv fuzz target — the interpreter driven statefully: command sequences from three sessions (an admin, a Unix user
// without the admin role, a TCP session that must AUTH first) on a server with two test-double engines and a flash
// store. Each step is a command with a header and payload taken from the input, a model upload, or a session
// closing and reopening. Whatever the sequence, every request is answered with OKAY or exactly one error bit, a
// refused command changes nothing another session can observe, and closing everything leaves no session behind.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "aisrv/flash/store.hpp"
#include "aisrv/protocol/commands.h"
#include "aisrv/server.hpp"
#include "flash/memory_flash.hpp"
#include "test_backend.hpp"

using namespace aisrv;

namespace {

class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return at_ >= n_; }
  uint8_t u8() { return at_ < n_ ? d_[at_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  std::span<const uint8_t> take(size_t n) {
    n = std::min(n, n_ - std::min(at_, n_));
    std::span<const uint8_t> s(d_ + at_, n);
    at_ += n;
    return s;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t at_ = 0;
};

std::shared_ptr<server::Session> open(server::Server& s, unsigned which) {
  server::Peer p;
  switch (which) {
    case 0: p = server::Peer::of(server::Trust::process, "local", "fuzz admin"); break;
    case 1:
      p = server::Peer::of(server::Trust::credentials, "unix");
      p.uid = 65000;
      p.gid = 65000;
      break;
    default: p = server::Peer::of(server::Trust::address, "tcp", "192.0.2.1:1"); p.loopback = false;
  }
  return s.open_session(p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  test::MemoryFlash dev(flash::Geometry{256u << 10, 4096, 1});
  flash::FormatOptions fo;
  fo.clients = 2;
  auto store = std::move(flash::ModelStore::format(dev, fo)).value();
  std::vector<std::unique_ptr<engine::InferenceBackend>> b;
  b.push_back(std::make_unique<test::TestBackend>());
  b.push_back(std::make_unique<test::TestBackend>());
  server::ServerOptions o;
  o.store = store.get();
  o.access.admin_gid = 4242;
  o.access.token = "fuzz-token-0123456789";
  o.session.memory = 1u << 20;
  o.max_payload = 1u << 16;
  auto server = std::move(server::Server::create(std::move(o), std::move(b))).value();
  std::shared_ptr<server::Session> sessions[3] = {open(*server, 0), open(*server, 1), open(*server, 2)};

  Input in(data, size);
  protocol::Response resp;
  for (int step = 0; step < 64 && !in.empty(); ++step) {
    const uint8_t op = in.u8();
    const unsigned who = (op & 3) % 3;
    auto& s = sessions[who];
    switch ((op >> 2) & 3) {
      case 0: {  // close and reopen
        server->close_session(*s);
        s = open(*server, who);
        continue;
      }
      case 1: {  // a valid test model (shape from the input) onto an engine
        test::TestModelSpec spec;
        spec.inputs = {static_cast<uint32_t>(1 + in.u8() % 64)};
        spec.outputs = {static_cast<uint32_t>(1 + in.u8() % 64), static_cast<uint32_t>(in.u8() % 8)};
        spec.layers = in.u8() % 4;
        const auto model = test::make_test_model(spec);
        server->handle(*s, protocol::Request{protocol::Header{AISRV_CMD_SET_MODEL_SECONDARY, in.u8() % 2u, 0}, model},
                       resp);
        break;
      }
      default: {  // any command: an opcode of the table (or any byte), engine, tensor, payload
        const uint8_t pick = in.u8();
        const uint32_t cmd = pick < 200 ? aisrv_command_at(pick % aisrv_command_count())->value : in.u8();
        const uint8_t e = in.u8();
        const uint32_t engine = e < 240 ? e % 3u : 0xFFFFFFFFu - (e & 1);
        const uint8_t t = in.u8();
        const uint32_t tensor = t < 250 ? t % 4u : (t == 250 ? AISRV_DEBUG_LOG_NEW | 1 : 0xFFFFFFFFu);
        const auto payload = in.take(in.u16() % 512);
        server->handle(*s, protocol::Request{protocol::Header{cmd, engine, tensor}, payload}, resp);
        break;
      }
    }
    // OKAY or exactly one error bit, never a state bit, never an undefined one
    const uint32_t st = resp.status;
    if (st != 0 && ((st & AISRV_STATUS_ERROR_MASK) != st || (st & (st - 1)) != 0)) __builtin_trap();
    if (st != 0 && !resp.payload.empty()) __builtin_trap();
  }
  for (auto& s : sessions) server->close_session(*s);
  if (server->session_count() != 0) __builtin_trap();
  return 0;
}
