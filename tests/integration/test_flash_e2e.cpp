// aisrv integration test — the model store through real processes: the test server (serving exactly like aisrvd,
// test-double engines) with --flash IMAGE, the client library and the `aisrv` CLI over a Unix socket.
//   write a model over the socket, restart the server with --boot, infer: same result as loading the file directly;
//   a transfer cut off by a crash leaves the old model; a corrupted image refuses to boot the model and says why;
//   `aisrv flash ...` and `aisrv flash-image ...` with --json and their exit codes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "aisrv/client/flash_client.hpp"
#include "aisrv/flash/format.hpp"
#include "aisrv/flash/open.hpp"
#include "aisrv/protocol/flash_payloads.hpp"
#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;

namespace {

struct Rig {
  test::TempDir dir;
  std::string sock = dir.file("srv.sock");
  std::string image = dir.file("flash.img");
  std::unique_ptr<test::ServerProcess> server;

  void start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--engines", "2", "--flash", image};
    args.insert(args.end(), extra.begin(), extra.end());
    server = std::make_unique<test::ServerProcess>(args, sock);
  }
  int stop() {
    const int rc = server->stop();
    std::filesystem::remove(sock);
    if (rc != 0) MESSAGE("server exit code " << rc << ", log:\n" << server->log());
    return rc;
  }
  void crash() {
    kill(server->pid(), SIGKILL);
    server.reset();
    std::filesystem::remove(sock);
  }
  client::Client connect() {
    auto c = client::Client::connect("unix:" + sock);
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().what()));
    return std::move(c).value();
  }
  test::RunResult cli(std::vector<std::string> args) {
    args.insert(args.begin(), {AISRV_CLI, "-c", "unix:" + sock});
    return test::run(args);
  }
};

std::vector<uint8_t> infer(client::Client& c, uint32_t engine, const std::vector<uint8_t>& input) {
  REQUIRE(c.set_input(engine, 0, input).ok());
  REQUIRE(c.start_inference(engine).ok());
  auto out = c.get_output(engine, 0);
  REQUIRE(out.ok());
  return *out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

const auto kModel = test::make_test_model(test::TestModelSpec{{32}, {32}, 3, 0});
const std::vector<uint8_t> kInput = [] {
  std::vector<uint8_t> v(32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 5 + 1);
  return v;
}();

}  // namespace

TEST_CASE("write over the socket, restart with --boot, infer: same result as loading the model directly") {
  Rig rig;
  rig.start();
  std::vector<uint8_t> wire_out;
  std::vector<uint8_t> blob(2'500'000);
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>(i * 31 + (i >> 11));
  {
    auto c = rig.connect();
    client::FlashWriteOptions o;
    o.name = "tiny";
    o.chunk = 7;
    uint64_t last = 0;
    o.progress = [&](uint64_t done, uint64_t total) {
      CHECK(done > last);
      CHECK(total == kModel.size());
      last = done;
    };
    auto slot = client::flash_write(c, 0, kModel, o);
    REQUIRE_MESSAGE(slot.ok(), (slot.ok() ? "" : slot.error().what()));
    CHECK(slot->name == "tiny");
    CHECK(last == kModel.size());
    auto big = client::flash_write(c, 1, blob, client::FlashWriteOptions{"blob", 0, 0, {}});
    REQUIRE(big.ok());
    auto back = client::flash_read(c, 1);
    REQUIRE(back.ok());
    CHECK(*back == blob);
    // The reference: the same model sent over the wire.
    REQUIRE(c.load_model(0, kModel).ok());
    wire_out = infer(c, 0, kInput);
  }
  CHECK(rig.stop() == 0);

  rig.start({"--boot", "0"});
  {
    auto c = rig.connect();
    auto info = c.engine_info(0);
    REQUIRE(info.ok());
    CHECK(info->model_loaded);
    CHECK(info->model_source == "flash");
    CHECK(infer(c, 0, kInput) == wire_out);
    // Engine 1 still holds the blob; loading it fails cleanly (not a test model) and is logged.
    auto bad = c.load_model_from_flash(1);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code == Errc::model_error);
  }
  CHECK(rig.stop() == 0);
}

TEST_CASE("a transfer cut off by a crash leaves the old model; a corrupted image is refused at boot") {
  Rig rig;
  rig.start();
  {
    auto c = rig.connect();
    REQUIRE(client::flash_write(c, 0, kModel, client::FlashWriteOptions{"old", 0, 0, {}}).ok());
    // Begin a new model and send half of it, then the server dies.
    const auto next = test::make_test_model(test::TestModelSpec{{8}, {8}, 1, 0});
    protocol::FlashBegin b{next.size(), std::nullopt, 0, "new"};
    std::vector<uint8_t> p;
    protocol::encode(b, p);
    REQUIRE(c.call(static_cast<uint32_t>(protocol::Command::SET_FLASH_BEGIN), 0, 0, p).ok());
    p.clear();
    protocol::encode_flash_chunk(0, std::span(next).subspan(0, 10), p);
    REQUIRE(c.call(static_cast<uint32_t>(protocol::Command::SET_FLASH_CHUNK), 0, 0, p).ok());
  }
  rig.crash();
  rig.start({"--boot", "0"});
  {
    auto c = rig.connect();
    auto cat = client::flash_catalogue(c);
    REQUIRE(cat.ok());
    REQUIRE(cat->entries[0].active);
    CHECK(cat->entries[0].active->name == "old");
    CHECK_FALSE(cat->entries[0].writing);
    CHECK(*client::flash_read(c, 0) == kModel);
    CHECK(c.engine_info(0)->model_loaded);
  }
  CHECK(rig.stop() == 0);

  // Flip one bit of the stored model in the image file.
  uint64_t at = 0;
  {
    flash::OpenOptions o;
    o.read_only = true;
    auto s = flash::open_store(rig.image, o);
    REQUIRE(s.ok());
    const auto e = *s->store->entry(0);
    const auto& slot = *e.active_slot();
    at = slot.extent_offset + slot.segment(flash::SegmentKind::model).offset + 4 + 9;
  }
  {
    std::fstream f(rig.image, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char byte = 0;
    f.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&byte, 1);
  }
  auto inspect = test::run({AISRV_CLI, "flash-image", "inspect", rig.image});
  CHECK(inspect.exit_code == 1);
  CHECK(inspect.out.find("CORRUPT") != std::string::npos);

  rig.start({"--boot", "0"});
  {
    auto c = rig.connect();
    CHECK_FALSE(c.engine_info(0)->model_loaded);
    auto log = c.debug_log(0);
    REQUIRE(log.ok());
    CHECK(log->find("integrity check failed") != std::string::npos);
    auto read = client::flash_read(c, 0);
    REQUIRE_FALSE(read.ok());
    CHECK(read.error().code == Errc::flash_error);
    // Rewriting the model repairs the engine.
    REQUIRE(client::flash_write(c, 0, kModel, client::FlashWriteOptions{"repaired", 0, 0, {}}).ok());
    REQUIRE(c.load_model_from_flash(0).ok());
  }
  CHECK(rig.stop() == 0);
  CHECK(rig.server->log().find("boot from flash failed") != std::string::npos);
}

TEST_CASE("CLI: flash write/list/read/load/erase and flash-image create/inspect, with --json and exit codes") {
  Rig rig;
  const std::string model_file = rig.dir.file("net.model");
  write_file(model_file, kModel);

  // Offline image for engines 0 and 1, then the server serves it.
  auto created = test::run({AISRV_CLI, "--json", "flash-image", "create", "--out", rig.image, "--size", "2M",
                            "--erase-block", "64K", "--clients", "2", "--model", "0=" + model_file, "--model",
                            "1=" + model_file, "--name", "1=second"});
  REQUIRE_MESSAGE(created.exit_code == 0, created.err);
  auto cj = nlohmann::json::parse(created.out);
  CHECK(cj["ok"] == true);
  CHECK(cj["models"].size() == 2);
  CHECK(cj["models"][1]["name"] == "second");
  auto again = test::run({AISRV_CLI, "flash-image", "create", "--out", rig.image, "--model", "0=" + model_file});
  CHECK(again.exit_code == 2);  // exists, no --force
  auto bad_client = test::run({AISRV_CLI, "flash-image", "create", "--out", rig.dir.file("x.img"), "--size", "1M",
                               "--clients", "2", "--model", "5=" + model_file});
  CHECK(bad_client.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(rig.dir.file("x.img")));

  rig.start({"--boot", "1"});
  auto list = rig.cli({"--json", "flash", "list"});
  REQUIRE_MESSAGE(list.exit_code == 0, list.err);
  auto lj = nlohmann::json::parse(list.out);
  CHECK(lj["engines"].size() == 2);
  CHECK(lj["engines"][1]["model"]["name"] == "second");

  auto write = rig.cli({"--engine", "0", "--json", "flash", "write", model_file, "--name", "fresh"});
  REQUIRE_MESSAGE(write.exit_code == 0, write.err);
  auto wj = nlohmann::json::parse(write.out);
  CHECK(wj["name"] == "fresh");
  CHECK(wj["slot"] == "B");
  CHECK(wj["size"] == kModel.size());

  const std::string back = rig.dir.file("back.model");
  auto read = rig.cli({"flash", "read", "--out", back, "--engine", "0"});
  REQUIRE_MESSAGE(read.exit_code == 0, read.err);
  std::ifstream in(back, std::ios::binary);
  CHECK(std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {}) == kModel);

  CHECK(rig.cli({"flash", "load", "--engine", "0"}).exit_code == 0);
  CHECK(rig.cli({"flash", "erase", "--engine", "0"}).exit_code == 0);
  auto load = rig.cli({"--json", "flash", "load", "--engine", "0"});
  CHECK(load.exit_code == 1);
  CHECK(nlohmann::json::parse(load.out)["error"]["code"] == "no_model");
  CHECK(rig.stop() == 0);

  auto inspect = test::run({AISRV_CLI, "--json", "flash-image", "inspect", rig.image});
  REQUIRE_MESSAGE(inspect.exit_code == 0, inspect.err);
  auto ij = nlohmann::json::parse(inspect.out);
  CHECK(ij["models"].size() == 1);
  CHECK(ij["models"][0]["client"] == 1);
}
