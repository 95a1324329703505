// aisrv integration test — the model store with the real CPU engine (aisrvd, TFLite INT8 models from the shared test
// data): models are written over the socket into aisrvd --flash, the daemon is restarted with --boot, and inference
// gives the same bytes as the model loaded directly over the wire — and as the TFLite Micro reference output.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "aisrv/client/flash_client.hpp"
#include "process.hpp"
#include "testdata.hpp"

using namespace aisrv;

namespace {

struct Case {
  std::string model, input, expected;
};

// The first case of each of these models (cases.json, TFLite Micro reference outputs).
std::vector<Case> pick_cases() {
  std::ifstream in(test::testdata_path("expected/cases.json"));
  REQUIRE(in);
  std::vector<Case> out;
  for (const char* want : {"person_detect.tflite", "micro_speech_quantized.tflite", "trained_lstm_int8.tflite"})
    for (const auto& c : nlohmann::json::parse(std::ifstream(test::testdata_path("expected/cases.json")))) {
      const std::string m = c.at("model");
      if (m.find(want) != std::string::npos) {
        out.push_back({m, c.at("input"), c.at("outputs").at(0).at("file")});
        break;
      }
    }
  REQUIRE(out.size() == 3);
  return out;
}

struct Daemon {
  test::TempDir& dir;
  std::string sock = dir.file("cpu.sock");
  std::unique_ptr<test::ServerProcess> proc;
  void start(const std::vector<std::string>& extra) {
    std::vector<std::string> args{AISRVD,        "--listen",         "unix:" + sock,        "--engine",
                                  "0=cpu",       "--engine",         "1=cpu:kernels=ref",   "--engine",
                                  "2=cpu",       "--flash",          dir.file("flash.img"), "--flash-size",
                                  "4M",          "--flash-erase-block", "64K"};
    args.insert(args.end(), extra.begin(), extra.end());
    proc = std::make_unique<test::ServerProcess>(args, sock);
  }
  int stop() {
    const int rc = proc->stop();
    std::filesystem::remove(sock);
    if (rc != 0) MESSAGE("aisrvd exit code " << rc << ":\n" << proc->log());
    return rc;
  }
  client::Client connect() {
    auto c = client::Client::connect("unix:" + sock);
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().what()));
    return std::move(c).value();
  }
};

std::vector<uint8_t> infer(client::Client& c, uint32_t engine, const std::vector<uint8_t>& input) {
  auto st = c.set_input(engine, 0, input);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().what()));
  REQUIRE(c.start_inference(engine).ok());
  auto out = c.get_output(engine, 0);
  REQUIRE(out.ok());
  return *out;
}

}  // namespace

TEST_CASE("CPU engine: models written over the socket, daemon restarted with --boot, same outputs as direct loads") {
  const auto cases = pick_cases();
  test::TempDir dir;
  Daemon d{dir};
  d.start({});
  std::vector<std::vector<uint8_t>> direct(cases.size());
  {
    auto c = d.connect();
    for (uint32_t e = 0; e < cases.size(); ++e) {
      const auto model = test::read_file(test::testdata_path(cases[e].model));
      client::FlashWriteOptions o;
      o.name = std::filesystem::path(cases[e].model).stem().string().substr(0, 32);
      o.format = protocol::kFlashFormatTflite;
      o.chunk = 64 * 1024;
      auto slot = client::flash_write(c, e, model, o);
      REQUIRE_MESSAGE(slot.ok(), (slot.ok() ? "" : slot.error().what()));
      CHECK(slot->format == protocol::kFlashFormatTflite);
      // The reference: the same file loaded over the wire.
      REQUIRE(c.load_model(e, model).ok());
      direct[e] = infer(c, e, test::read_file(test::testdata_path(cases[e].input)));
      CHECK(direct[e] == test::read_file(test::testdata_path(cases[e].expected)));
    }
  }
  CHECK(d.stop() == 0);

  d.start({"--boot", "0", "--boot", "1", "--boot", "2"});
  {
    auto c = d.connect();
    for (uint32_t e = 0; e < cases.size(); ++e) {
      INFO(cases[e].model);
      auto info = c.engine_info(e);
      REQUIRE(info.ok());
      CHECK(info->model_loaded);
      CHECK(info->model_source == "flash");
      CHECK(infer(c, e, test::read_file(test::testdata_path(cases[e].input))) == direct[e]);
    }
    // SET_MODEL_PRIMARY_FLASH on engine 2 with engine 0's model: write it there, load it into the arena, infer.
    const auto m0 = test::read_file(test::testdata_path(cases[0].model));
    REQUIRE(client::flash_write(c, 2, m0, client::FlashWriteOptions{"swap", 0, 0, {}}).ok());
    REQUIRE(c.load_model_from_flash(2, client::Placement::arena).ok());
    CHECK(infer(c, 2, test::read_file(test::testdata_path(cases[0].input))) == direct[0]);
  }
  CHECK(d.stop() == 0);
}
