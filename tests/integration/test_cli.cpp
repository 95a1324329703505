// Integration tests: the `aisrv` CLI against a real server process (the test server, which serves exactly like
// aisrvd) over Unix and TCP sockets — every subcommand, --json output, exit codes, AISRV_CONNECT.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "process.hpp"
#include "test_backend.hpp"
#include "testdata.hpp"

using namespace aisrv;
using aisrv::test::run;

namespace {

// TCP peers are users unless they AUTH: the TCP target sends the token (--token-file) so both targets are admin.
std::string write_token_file(const test::TempDir& dir) {
  const std::string path = dir.file("token");
  std::ofstream(path) << "cli-test-token-0123456789abcdef\n";
  ::chmod(path.c_str(), 0600);
  return path;
}

struct Fixture {
  test::TempDir dir;
  std::string sock = dir.file("s.sock");
  std::string token_file = write_token_file(dir);
  test::ServerProcess server{{AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--listen", "tcp:0", "--engines", "2",
                              "--chain", "0:1", "--token-file", token_file},
                             sock};
  std::string unix_target = "unix:" + sock;
  std::string tcp_target;

  Fixture() { tcp_target = server.wait_log("listening on (tcp:[0-9.]+:[0-9]+)"); }

  test::RunResult cli(std::vector<std::string> args, const std::string& target = {}) {
    std::vector<std::string> full{AISRV_CLI, "--connect", target.empty() ? unix_target : target};
    if (target.rfind("tcp:", 0) == 0) full.insert(full.end(), {"--token-file", token_file});
    full.insert(full.end(), args.begin(), args.end());
    return run(full);
  }

  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string p = dir.file(name);
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                             static_cast<std::streamsize>(bytes.size()));
    return p;
  }
};

nlohmann::json json_of(const test::RunResult& r) {
  INFO(r.out << r.err);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("every subcommand works over Unix and TCP, with text and JSON output") {
  Fixture f;
  const auto model = f.write("m.bin", test::make_test_model(test::TestModelSpec{{8}, {8}, 3, 0}));
  const std::vector<uint8_t> input{1, 2, 3, 4, 5, 6, 7, 8};
  const auto in = f.write("in.bin", input);
  const auto out_file = f.dir.file("out.bin");
  // engine 1 gets the chained output: 8 bytes in, 8 out
  REQUIRE(f.cli({"-e", "1", "load", model}).exit_code == 0);

  for (const auto& target : {f.unix_target, f.tcp_target}) {
    CAPTURE(target);
    auto r = f.cli({"version"}, target);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("protocol 1.3") != std::string::npos);
    CHECK(r.out.find("capabilities: timing-record,cancel,chain,infer,sessions") != std::string::npos);
    auto v = json_of(f.cli({"--json", "version"}, target));
    CHECK(v["server"]["engines"] == 2);

    r = f.cli({"id"}, target);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "0x41495356\n");
    CHECK(json_of(f.cli({"--json", "id"}, target))["id"] == 0x41495356);
    CHECK(f.cli({"hello", "-n", "3"}, target).exit_code == 0);

    r = f.cli({"load", model}, target);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("input 0: in0 UINT8 [1,8] (8 bytes), scale 0.5 zero point 3") != std::string::npos);
    auto spec = json_of(f.cli({"--json", "spec"}, target));
    CHECK(spec["input_length"] == 8);
    CHECK(spec["timings_length"] == 12);
    auto tensors = json_of(f.cli({"--json", "tensors"}, target));
    CHECK(tensors["inputs"][0]["shape"] == nlohmann::json::array({1, 8}));
    CHECK(tensors["format"] == "test");

    r = f.cli({"infer", "--input", in, "--output", out_file}, target);
    CHECK(r.exit_code == 0);
    const auto expect = test::expected_output(input, 8, 0);
    CHECK(test::read_file(out_file) == expect);
    auto inf = json_of(f.cli({"--json", "infer", "-i", in}, target));
    CHECK(inf["outputs"][0]["top"][0]["index"] == 7);  // the largest output byte is the last one (8+1)
    CHECK(inf["outputs"][0]["bytes"] == 8);

    CHECK(inf["outputs"][0]["top"][0]["raw"] == 9);
    auto only = json_of(f.cli({"--json", "infer", "-i", in, "-t", "0"}, target));
    CHECK(only["outputs"].size() == 1);
    CHECK(f.cli({"infer", "-i", in, "-t", "3"}, target).exit_code == 2);  // no output 3

    // Timings of the inference this invocation ran (they belong to its session).
    r = f.cli({"infer", "-i", in, "--timings"}, target);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("per-operator times:") != std::string::npos);
    CHECK(r.out.find("   2:") != std::string::npos);
    r = f.cli({"infer", "-i", in, "--summary"}, target);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("TEST_OP") != std::string::npos);
    CHECK(r.out.find("by operator type") != std::string::npos);
    auto tj = json_of(f.cli({"--json", "infer", "-i", in, "--summary"}, target));
    CHECK(tj["summary"]["layers"].size() == 3);
    auto sj = json_of(f.cli({"--json", "session"}, target));
    CHECK(sj["role"] == "admin");
    CHECK(sj["transport"] == (target == f.unix_target ? "unix" : "tcp"));

    auto st = json_of(f.cli({"--json", "status"}, target));
    CHECK(st["model_loaded"] == true);
    CHECK(st["chained_to"] == "1");
    CHECK(f.cli({"status"}, target).out.find("engine 0: test") != std::string::npos);

    CHECK(f.cli({"unload"}, target).exit_code == 0);
    r = f.cli({"spec"}, target);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("engine 0 has no model loaded") != std::string::npos);
    auto logj = json_of(f.cli({"--json", "log", "-n", "1"}, target));
    CHECK(logj["log"].size() == 1);
    // Shared lines every session sees; another invocation's errors are its own.
    const auto log = f.cli({"log"}, target).out;
    CHECK(log.find("model unloaded") != std::string::npos);
    CHECK(log.find("GET_SPEC: engine 0 has no model loaded") == std::string::npos);
  }
  CHECK(f.server.stop() == 0);
}

TEST_CASE("exit codes: 1 server error, 2 usage, 3 cannot connect; JSON errors") {
  Fixture f;
  auto r = f.cli({"-e", "9", "spec"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("engine 9 does not exist") != std::string::npos);
  auto j = json_of(f.cli({"--json", "-e", "9", "spec"}));
  CHECK(j["error"]["code"] == "bad_engine");
  CHECK(f.cli({"load", f.write("junk", {1, 2, 3})}).exit_code == 1);
  CHECK(f.cli({"nosuchcommand"}).exit_code == 2);
  CHECK(f.cli({"infer"}).exit_code == 2);  // --input is required
  CHECK(f.cli({"load", f.dir.file("missing.tflite")}).exit_code == 2);
  CHECK(run({AISRV_CLI}).exit_code == 2);
  CHECK(run({AISRV_CLI, "--connect", "bogus:thing", "id"}).exit_code == 2);
  r = run({AISRV_CLI, "--connect", "unix:" + f.dir.file("nobody.sock"), "id"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("cannot connect") != std::string::npos);
  CHECK(run({AISRV_CLI, "--connect", "tcp:1", "id"}).exit_code == 3);
  // AISRV_CONNECT sets the default target
  r = run({AISRV_CLI, "id"}, std::chrono::seconds(30), {"AISRV_CONNECT=" + f.unix_target});
  CHECK(r.exit_code == 0);
  CHECK(f.server.stop() == 0);
}

TEST_CASE("without --connect, a user with no daemon of their own is served by the system socket") {
  Fixture f;
  test::TempDir runtime;  // $XDG_RUNTIME_DIR without an aisrv socket: the user's own default socket does not exist
  std::vector<std::string> cmd;
  if (::geteuid() == 0) {  // root's default socket is the system one: run the CLI as another user
    if (::access("/usr/bin/setpriv", X_OK) != 0) {
      MESSAGE("root without /usr/bin/setpriv to run the CLI as uid 65534; skipped");
      return;
    }
    cmd = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    REQUIRE(::chmod(f.dir.path().c_str(), 0755) == 0);
    REQUIRE(::chmod(f.sock.c_str(), 0666) == 0);
    REQUIRE(::chmod(runtime.path().c_str(), 0777) == 0);
  }
  cmd.insert(cmd.end(), {AISRV_CLI, "id"});
  const std::string runtime_env = "XDG_RUNTIME_DIR=" + runtime.path().string();
  // $AISRV_SYSTEM_SOCKET stands in for /run/aisrv/aisrv.sock
  auto r = run(cmd, std::chrono::seconds(30), {"AISRV_CONNECT=", runtime_env, "AISRV_SYSTEM_SOCKET=" + f.unix_target});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  // neither there: the error names both sockets tried
  const std::string missing = "unix:" + f.dir.file("no-system.sock");
  r = run(cmd, std::chrono::seconds(30), {"AISRV_CONNECT=", runtime_env, "AISRV_SYSTEM_SOCKET=" + missing});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find(runtime.file("aisrv/aisrv.sock")) != std::string::npos);
  CHECK(r.err.find(missing) != std::string::npos);
  CHECK(f.server.stop() == 0);
}

TEST_CASE("acquire, gpio and i2c subcommands: frames in, outputs out; what the server lacks is named") {
  test::TempDir dir;
  const std::string frames = dir.file("frames.raw");
  std::ofstream(frames, std::ios::binary) << std::string("\x05\x06\x07\x08\x10\x20\x30\x40", 8);
  const std::string sock = dir.file("s.sock");
  test::ServerProcess server{{AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--engines", "1", "--sensor",
                              "0=" + frames},
                             sock};
  auto cli = [&](std::vector<std::string> args) {
    std::vector<std::string> full{AISRV_CLI, "--connect", "unix:" + sock};
    full.insert(full.end(), args.begin(), args.end());
    return run(full);
  };
  const std::string model = dir.file("m.bin");
  const auto m = test::make_test_model(test::TestModelSpec{{4}, {4}, 3, 0});
  std::ofstream(model, std::ios::binary).write(reinterpret_cast<const char*>(m.data()), std::streamsize(m.size()));
  REQUIRE(cli({"load", model}).exit_code == 0);
  auto r = cli({"acquire", "mode"});
  CHECK(r.out == "engine 0: single\n");  // XMOS's value 0: not streaming
  // Frame 0, then frame 1: the frame as fed and the outputs are written and printed.
  const std::string frame_file = dir.file("frame.bin"), out_file = dir.file("out.bin");
  r = cli({"acquire", "single", "--frame-out", frame_file, "-o", out_file});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out.find("output 0") != std::string::npos);
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  };
  CHECK(slurp(frame_file) == std::vector<uint8_t>{5, 6, 7, 8});
  CHECK(slurp(out_file) == test::expected_output({5, 6, 7, 8}, 4, 0));
  auto j = json_of(cli({"--json", "acquire", "single"}));
  CHECK(j["outputs"][0]["raw"] == nlohmann::json::array({17, 33, 49, 65}));
  // --no-infer: what an XMOS host's START_ACQUIRE_SINGLE does, input 0 only.
  r = cli({"acquire", "single", "--no-infer", "--frame-out", frame_file});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out == "engine 0: frame acquired into input 0 (no inference)\n");
  CHECK(slurp(frame_file) == std::vector<uint8_t>{5, 6, 7, 8});
  // Each invocation is a session of its own: a frame it did not acquire is not there, unless a stream runs.
  r = cli({"acquire", "frame"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("this session acquired none and no stream runs") != std::string::npos);
  // A stream outlives the invocation that started it; its frames are everyone's to look at.
  REQUIRE(cli({"acquire", "stream", "start"}).exit_code == 0);
  CHECK(json_of(cli({"--json", "acquire", "mode"}))["mode_name"] == "stream");
  for (int i = 0; i < 100 && cli({"acquire", "frame"}).exit_code != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  j = json_of(cli({"--json", "acquire", "frame", "-o", frame_file}));
  CHECK(j["bytes"] == 4);
  const auto streamed = slurp(frame_file);
  CHECK((streamed == std::vector<uint8_t>{5, 6, 7, 8} || streamed == std::vector<uint8_t>{0x10, 0x20, 0x30, 0x40}));
  CHECK(cli({"acquire", "stream", "stop"}).out == "engine 0: stream stopped\n");
  CHECK(json_of(cli({"--json", "acquire", "mode"}))["mode"] == 0);
  // A raw source cannot crop; this server has no I2C bus and no GPIO lines: the server's reason is printed.
  r = cli({"acquire", "single", "--window", "0,2,0,2"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("a crop window needs a camera") != std::string::npos);
  r = cli({"i2c", "write", "0x3c", "0x12", "0x80"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("has no I2C bus") != std::string::npos);
  r = cli({"--json", "gpio", "get"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("no GPIO outputs configured (start aisrvd with --gpio 0=CHIP:LINE") != std::string::npos);
  // Usage errors are caught before anything is sent.
  CHECK(cli({"i2c", "write", "0x80", "0", "0"}).exit_code == 2);
  CHECK(cli({"acquire", "single", "--window", "1,2,3"}).exit_code == 2);
  CHECK(cli({"gpio", "set", "0"}).exit_code == 2);
  CHECK(cli({"gpio", "mode", "sideways"}).exit_code == 2);
  CHECK(server.stop() == 0);
}

TEST_CASE("--help on every subcommand explains it and exits 0") {
  for (const char* sub : {"id", "version", "status", "session", "hello", "log", "load", "unload", "spec", "tensors",
                          "infer", "cancel", "bench", "monitor", "acquire", "gpio", "i2c"}) {
    CAPTURE(sub);
    auto r = run({AISRV_CLI, sub, "--help"});
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
  }
  auto r = run({AISRV_CLI, "--help"});
  CHECK(r.out.find("Exit codes") != std::string::npos);
}

TEST_CASE("bench: N inferences from several clients, the server's split; monitor: JSON lines with rates") {
  Fixture f;
  // 2 layers of 1 ms: about 2 ms of compute per inference
  const auto model = f.write("m.bin", test::make_test_model(test::TestModelSpec{{64}, {16}, 2, 1000}));
  auto r = f.cli({"--json", "bench", model, "-n", "40", "--clients", "2", "--warmup", "1"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.out << r.err);
  CHECK(r.err.empty());  // no progress bar when stderr is not a terminal
  auto j = json_of(r);
  CHECK(j["inferences"] == 40);
  CHECK(j["clients"] == 2);
  CHECK(j["kind"] == "test");
  CHECK(j["fps"].get<double>() > 0);
  CHECK(j["latency_ms"]["p50"].get<double>() >= 1.5);
  CHECK(j["latency_ms"]["max"].get<double>() >= j["latency_ms"]["p99"].get<double>());
  CHECK(j["server"]["inferences"] == 40);
  CHECK(j["server"]["compute_ms"].get<double>() >= 1.5);
  CHECK(j["server"]["total_ms"].get<double>() >= j["server"]["compute_ms"].get<double>());
  CHECK(j.contains("transfer_ms"));

  r = f.cli({"bench", "--time", "0.3"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.out << r.err);
  CHECK_MESSAGE(r.out.find("inferences/s") != std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("compute") != std::string::npos, r.out);
  CHECK(f.cli({"bench", "-n", "5", "--time", "1"}).exit_code == 2);  // one or the other
  CHECK(f.cli({"-e", "1", "bench", "-n", "5"}).exit_code == 1);      // engine 1 has no model: the server says so

  // monitor while a client runs inferences: two samples, the second with rates
  test::RunResult load_gen;
  std::thread gen([&] { load_gen = f.cli({"bench", "--time", "1.5"}); });
  r = f.cli({"monitor", "-n", "3", "--interval", "0.3"});  // stdout is a pipe: JSON lines
  gen.join();
  REQUIRE_MESSAGE(r.exit_code == 0, r.out << r.err);
  std::vector<nlohmann::json> samples;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) samples.push_back(nlohmann::json::parse(line));
  REQUIRE(samples.size() == 3);
  CHECK(samples[0]["engines"].size() == 2);
  CHECK_FALSE(samples[0]["engines"][0].contains("inferences_per_s"));
  CHECK(samples[2]["engines"][0]["inferences_per_s"].get<double>() > 0);
  CHECK(samples[2]["engines"][0]["model"]["format"] == "test");
  CHECK(samples[2]["sessions"].get<uint32_t>() >= 2);  // the monitor and the bench client
  CHECK(samples[2]["engines"][1]["model"].is_null());
}
