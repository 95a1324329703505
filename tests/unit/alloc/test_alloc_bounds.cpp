// Unit tests: sizes written in hostile input are checked before anything is allocated for them. A counting
// operator new (this binary only) adds up every allocation made during one call: a HEF whose edge layer claims a
// 905 MiB frame, an INFER request or a tensor-info record claiming more than it carries, and a model through the
// interpreter with a payload limit below its tensors must each be refused having allocated less than 10 MiB.
#include <doctest/doctest.h>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "aisrv/engine/hailo8/backend.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/stream_framing.hpp"
#include "aisrv/server.hpp"
#include "hef_builder.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocated{0};  // bytes handed out while counting

void* counted(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  if (g_counting.load(std::memory_order_relaxed)) g_allocated.fetch_add(malloc_usable_size(p));
  return p;
}

// Bytes allocated (in all, not net) while `fn` runs.
template <typename Fn>
uint64_t allocated_by(Fn&& fn) {
  g_allocated = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocated.load();
}
}  // namespace

// Every form of the global allocation functions, so none of them reaches the sanitizer's own (whose delete would
// then see our malloc'ed blocks).
void* operator new(size_t n) { return counted(n); }
void* operator new[](size_t n) { return counted(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(size_t n, std::align_val_t a) {
  const size_t align = static_cast<size_t>(a);
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
  if (g_counting.load(std::memory_order_relaxed)) g_allocated.fetch_add(malloc_usable_size(p));
  return p;
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

using namespace aisrv;
namespace th = aisrv::test::hef;
constexpr uint64_t kBound = 10u << 20;

TEST_CASE("the counting allocator counts (the bound below could not pass by accident)") {
  std::vector<uint8_t>* v = nullptr;
  const uint64_t n = allocated_by([&] { v = new std::vector<uint8_t>(32u << 20); });
  delete v;
  CHECK(n >= (32u << 20));
}

TEST_CASE("HEF: an edge layer claiming a 905 MiB frame is refused before 10 MiB are allocated") {
  auto file = th::simple_file();
  // 1000 x 1000 x 950 bytes: 950,000,000 = 906 MiB of input frame.
  auto* layer = file.mutable_network_groups(0)->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(0);
  auto* base = layer->mutable_info()->mutable_base();
  base->set_height(1000);
  base->set_width(1000);
  base->set_features(950);
  base->set_padded_height(1000);
  base->set_padded_width(1000);
  base->set_padded_features(950);
  base->set_format(0);  // NHWC
  const auto bytes = th::container(2, file);
  engine::hailo8::Hailo8Options options;  // no device is touched by load()
  auto backend = engine::hailo8::make_hailo8_backend(options);
  Result<engine::ModelInfo> r = make_error(Errc::internal, "not run");
  const uint64_t n = allocated_by([&] { r = backend->load(bytes, engine::LoadOptions{}); });
  MESSAGE("HEF load allocated " << n << " bytes before refusing");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  CHECK(r.error().message.find("950000000 bytes") != std::string::npos);
  CHECK(n < kBound);
  // The same HEF with a sane shape loads (the refusal is about the size, not the edit).
  base->set_height(10);
  base->set_width(10);
  base->set_features(3);
  base->set_padded_height(10);
  base->set_padded_width(10);
  base->set_padded_features(3);
  auto ok_backend = engine::hailo8::make_hailo8_backend(options);
  auto loaded = ok_backend->load(th::container(2, file), engine::LoadOptions{});
  CHECK_MESSAGE(loaded.ok(), (loaded ? "" : loaded.error().what()));
}

TEST_CASE("HEF through the interpreter: a tensor above the server's payload limit is refused before allocation") {
  auto file = th::simple_file();
  auto* base = file.mutable_network_groups(0)->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(1)
                   ->mutable_info()->mutable_base();
  base->set_features(3u << 20);  // a 3 MiB output
  base->set_padded_features(3u << 20);
  std::vector<std::unique_ptr<engine::InferenceBackend>> backends;
  backends.push_back(engine::hailo8::make_hailo8_backend({}));
  server::ServerOptions o;
  o.max_payload = 1u << 20;
  auto server = std::move(server::Server::create(std::move(o), std::move(backends))).value();
  const auto bytes = th::container(2, file);
  Status st = ok();
  const uint64_t n = allocated_by([&] { st = server->engine(0)->load_model(bytes, engine::Placement::external, "t"); });
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("the payload limit is 1048576 bytes") != std::string::npos);
  CHECK(n < (3u << 20));  // not even the one tensor
}

TEST_CASE("wire records that claim more than they carry are refused before allocating for the claim") {
  // INFER: 16 inputs of 64 MiB each announced in a 140-byte payload
  std::vector<uint8_t> req;
  protocol::ByteWriter w(req);
  w.u32(16);
  for (uint32_t i = 0; i < 16; ++i) {
    w.u32(i);
    w.u32(64u << 20);
  }
  w.u32(0);
  uint64_t n = allocated_by([&] { CHECK_FALSE(protocol::decode_infer_request(req).ok()); });
  CHECK(n < kBound);
  // the answer side, as a client decodes it
  n = allocated_by([&] { CHECK_FALSE(protocol::decode_infer_answer(req).ok()); });
  CHECK(n < kBound);
  // a timing record announcing 2^31 layers
  std::vector<uint8_t> timing(28, 0);
  timing[27] = 0x7F;
  timing[26] = timing[25] = timing[24] = 0xFF;
  n = allocated_by([&] { CHECK_FALSE(protocol::decode_timing_record(timing).ok()); });
  CHECK(n < kBound);
  // a socket frame announcing 4 GiB
  const auto prefix = protocol::stream::encode_request_prefix(protocol::Header{0x86, 0, 0}, 0xFFFFFFFFu);
  n = allocated_by([&] { CHECK_FALSE(protocol::stream::decode_request_prefix(prefix, AISRV_MAX_PAYLOAD).ok()); });
  CHECK(n < kBound);
}
