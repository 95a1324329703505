// Unit tests: structured payload codecs, version compatibility, hostile decodes.
#include <doctest/doctest.h>

#include <random>

#include "aisrv/protocol/payloads.hpp"

using namespace aisrv;
using namespace aisrv::protocol;

TEST_CASE("spec is five u32 words with two leading zeros") {
  std::vector<uint8_t> out;
  encode(Spec{9216, 2, 124}, out);
  REQUIRE(out.size() == 20);
  CHECK(out[0] == 0);
  CHECK(out[4] == 0);
  CHECK(out[8] == 0x00);
  CHECK(out[9] == 0x24);
  auto s = decode_spec(out);
  REQUIRE(s.ok());
  CHECK(s->input_length == 9216);
  CHECK(s->output_length == 2);
  CHECK(s->timings_length == 124);
  out.push_back(0);
  CHECK(!decode_spec(out));
}

TEST_CASE("version record round-trips and compatibility explains itself") {
  VersionInfo v{1, 3, 1, 0x5, 1 << 20, 2, "aisrv 0.1.0"};
  std::vector<uint8_t> out;
  encode(v, out);
  auto d = decode_version(out);
  REQUIRE(d.ok());
  CHECK(d->minor == 3);
  CHECK(d->server_version == "aisrv 0.1.0");
  CHECK(check_compatible(*d, 1, 1).ok());
  VersionInfo future{2, 0, 2, 0, 0, 1, "x"};
  auto c = check_compatible(future, 1, 1);
  REQUIRE(!c);
  CHECK(c.error().code == Errc::incompatible);
  CHECK(c.error().message.find("upgrade the client") != std::string::npos);
  VersionInfo bridging{2, 0, 1, 0, 0, 1, "x"};  // a v2 server that still speaks v1
  CHECK(check_compatible(bridging, 1, 1).ok());
}

TEST_CASE("tensor info round-trips") {
  ModelTensors m;
  m.format = "tflite";
  m.model_bytes = 300568;
  m.arena_bytes = 85024;
  m.inputs.push_back(TensorInfo{"input", DType::int8, {1, 96, 96, 1}, 9216, -1, {0.0078f}, {-1}});
  m.outputs.push_back(TensorInfo{"out", DType::int8, {1, 2}, 2, 3, {0.1f, 0.2f}, {0, 0}});
  std::vector<uint8_t> out;
  encode(m, out);
  auto d = decode_tensor_info(out);
  REQUIRE(d.ok());
  CHECK(d->inputs.size() == 1);
  CHECK(d->inputs[0].shape == std::vector<int32_t>{1, 96, 96, 1});
  CHECK(d->inputs[0].zero_point[0] == -1);
  CHECK(d->outputs[0].quant_axis == 3);
  CHECK(d->outputs[0].scale.size() == 2);
  CHECK(d->arena_bytes == 85024);
  // every truncation is refused, never crashes
  for (size_t cut = 0; cut < out.size(); ++cut) CHECK(!decode_tensor_info(std::span(out).first(cut)));
}

TEST_CASE("engine info and timing record round-trip") {
  EngineInfo e{"cpu", "kernels=opt", true, "tflite", 1234, "wire", 42, "1"};
  std::vector<uint8_t> out;
  encode(e, out);
  auto d = decode_engine_info(out);
  REQUIRE(d.ok());
  CHECK(d->inferences == 42);
  CHECK(d->chained_to == "1");

  TimingRecord t{10, 200, 300, {{"conv", "CONV_2D", 150}, {"sm", "SOFTMAX", 50}}};
  out.clear();
  encode(t, out);
  auto dt = decode_timing_record(out);
  REQUIRE(dt.ok());
  CHECK(dt->layers.size() == 2);
  CHECK(dt->layers[0].op == "CONV_2D");
  out.clear();
  std::vector<LayerTime> layers{{"a", "X", 5}, {"b", "Y", 1ull << 40}};
  encode_timings(layers, out);
  auto ti = decode_timings(out);
  REQUIRE(ti.ok());
  CHECK((*ti)[0] == 5);
  CHECK((*ti)[1] == 0xFFFFFFFFu);
  CHECK(!decode_timings(std::vector<uint8_t>(3)));
}

TEST_CASE("server statistics round-trip; truncation and engine counts above the limit are refused") {
  ServerStats s;
  s.uptime_ns = 5'000'000'000;
  s.sessions = 3;
  s.sessions_total = 17;
  for (uint32_t i = 0; i < 2; ++i) {
    EngineStats e;
    e.engine = i;
    e.kind = i ? "hailo8" : "cpu";
    e.state = i ? 0x1u : 0u;  // BUSY
    e.model_loaded = i == 0;
    e.model_format = "tflite";
    e.model_source = "wire (external)";
    e.model_bytes = 1234;
    e.inferences = 100 + i;
    e.failed = 2;
    e.cancelled = 1;
    e.compute_ns = 7'000'000;
    e.last_compute_ns = 70'000;
    e.last_queue_ns = 1'000;
    e.last_total_ns = 80'000;
    e.last_end_ns = 4'900'000'000;
    e.queued = 4;
    e.running_session = i ? 9 : 0;
    s.engines.push_back(e);
  }
  std::vector<uint8_t> out;
  encode(s, out);
  auto d = decode_server_stats(out);
  REQUIRE(d.ok());
  CHECK(d->sessions == 3);
  CHECK(d->sessions_total == 17);
  REQUIRE(d->engines.size() == 2);
  CHECK(d->engines[1].kind == "hailo8");
  CHECK(d->engines[1].running_session == 9);
  CHECK(d->engines[1].inferences == 101);
  CHECK(d->engines[0].last_end_ns == 4'900'000'000);
  CHECK(d->engines[0].queued == 4);
  for (size_t cut = 0; cut < out.size(); ++cut)
    CHECK_FALSE(decode_server_stats(std::span<const uint8_t>(out.data(), cut)));
  std::vector<uint8_t> many(24, 0);
  many[20] = 17;  // 17 engines
  CHECK(decode_server_stats(many).error().code == Errc::protocol_error);
}

TEST_CASE("model metadata round-trips; truncation, trailing bytes and entry counts above the limit are refused") {
  ModelMetadata m;
  m.entries = {{"task", "detection"}, {"labels", std::string(70000, 'x') + "\nperson\n"}, {"empty", ""}};
  std::vector<uint8_t> out;
  encode(m, out);
  auto d = decode_model_metadata(out);
  REQUIRE(d.ok());
  CHECK(d->entries == m.entries);
  REQUIRE(d->find("task"));
  CHECK(*d->find("task") == "detection");
  CHECK_FALSE(d->find("nothing"));
  for (size_t cut = 0; cut < out.size(); cut += 997)
    CHECK_FALSE(decode_model_metadata(std::span<const uint8_t>(out.data(), cut)));
  out.push_back(0);
  CHECK_FALSE(decode_model_metadata(out));
  std::vector<uint8_t> many{0x01, 0x01, 0x00, 0x00};  // 257 entries
  CHECK(decode_model_metadata(many).error().code == Errc::protocol_error);
  std::vector<uint8_t> none{0, 0, 0, 0};
  REQUIRE(decode_model_metadata(none).ok());
  CHECK(decode_model_metadata(none)->entries.empty());
}

TEST_CASE("INFER request and answer: the documented bytes, views into the payload, hostile framings refused") {
  // docs/protocol.md 3.9: one input, #0, 4 bytes 0a 0b 0c 0d
  const std::vector<uint8_t> a{0x0a, 0x0b, 0x0c, 0x0d};
  const InferTensor one[] = {{0, a}};
  std::vector<uint8_t> req;
  encode_infer_request(one, req);
  CHECK(req == std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d});
  // inputs in any order, an empty one among them; decoded as views into the payload (no copy)
  const InferTensor two[] = {{3, a}, {1, {}}};
  req.clear();
  encode_infer_request(two, req);
  auto d = decode_infer_request(req);
  REQUIRE(d.ok());
  REQUIRE(d->size() == 2);
  CHECK((*d)[0].index == 3);
  CHECK((*d)[0].bytes.data() == req.data() + 4 + 2 * 8);
  CHECK(std::vector<uint8_t>((*d)[0].bytes.begin(), (*d)[0].bytes.end()) == a);
  CHECK((*d)[1].index == 1);
  CHECK((*d)[1].bytes.empty());
  // hostile: the bytes short or long, an index at the limit or given twice, a count above the limit
  std::vector<uint8_t> shorter(req.begin(), req.end() - 1), longer = req;
  longer.push_back(0);
  CHECK(decode_infer_request(shorter).error().message.find("announce 4 bytes, 3 follow") != std::string::npos);
  CHECK(decode_infer_request(longer).error().code == Errc::protocol_error);
  std::vector<uint8_t> twice = req;
  twice[12] = 3;  // the second input's index: 3 again
  CHECK(decode_infer_request(twice).error().message.find("index 3 given twice") != std::string::npos);
  std::vector<uint8_t> limit = req;
  limit[4] = AISRV_MAX_TENSORS;
  CHECK(decode_infer_request(limit).error().message.find("index 16 is not below the limit 16") != std::string::npos);
  std::vector<uint8_t> many(4 + 8 * 17, 0);
  many[0] = 17;
  CHECK(decode_infer_request(many).error().message.find("17 elements, above the limit 16") != std::string::npos);
  CHECK(decode_infer_request(std::vector<uint8_t>{0, 0, 0, 0})->empty());  // 0 inputs
  // the answer replaces its buffer's content; 16 outputs (the limit), the last empty
  std::vector<std::span<const uint8_t>> outs(AISRV_MAX_TENSORS, std::span<const uint8_t>(a));
  outs.back() = {};
  std::vector<uint8_t> answer{0xEE, 0xEE};
  encode_infer_answer(outs, answer);
  CHECK(answer.size() == 4 + 4 * 16 + 4 * 15);
  auto o = decode_infer_answer(answer);
  REQUIRE(o.ok());
  REQUIRE(o->size() == 16);
  CHECK((*o)[0].data() == answer.data() + 4 + 4 * 16);
  CHECK((*o)[15].empty());
  answer[0] = 17;
  CHECK(decode_infer_answer(answer).error().code == Errc::protocol_error);
}

TEST_CASE("GET_TIMINGS: u32 per layer, saturated; a payload that is not whole words is refused") {
  const std::vector<LayerTime> layers{{"a", "ADD", 5}, {"b", "CONV_2D", 0x1'0000'0000ull}};
  std::vector<uint8_t> out;
  encode_timings(layers, out);
  CHECK(out == std::vector<uint8_t>{5, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF});
  CHECK(*decode_timings(out) == std::vector<uint32_t>{5, 0xFFFFFFFF});
  CHECK(decode_timings({})->empty());
  out.pop_back();
  CHECK(decode_timings(out).error().message.find("7 bytes are not a whole number of 4-byte elements") !=
        std::string::npos);
}

TEST_CASE("random bytes never crash the decoders") {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(rng() % 64);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    (void)decode_tensor_info(junk);
    (void)decode_engine_info(junk);
    (void)decode_timing_record(junk);
    (void)decode_version(junk);
    (void)decode_spec(junk);
    (void)decode_server_stats(junk);
    (void)decode_model_metadata(junk);
    (void)decode_timings(junk);
    (void)decode_infer_request(junk);
    (void)decode_infer_answer(junk);
  }
  // a layer count that the payload cannot hold is refused before allocating
  std::vector<uint8_t> lie(28, 0);
  lie[24] = 0xFF;
  lie[25] = 0xFF;
  lie[26] = 0xFF;
  lie[27] = 0x7F;
  CHECK(decode_timing_record(lie).error().code == Errc::protocol_error);
}
