// Integration test: the daemon's sensor wiring with a camera that is not plugged in — the server (the serving loop
// aisrvd runs, tests/support/test_server.cpp) starts, says the camera is absent, keeps serving, and an acquisition
// answers ERROR_SENSOR with the reason; udev's persistent names (with ':') are accepted on the command line.
#include <doctest/doctest.h>

#include <fstream>

#include "process.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using test::run;

TEST_CASE("the server starts without its camera, serves, and says why an acquisition fails") {
  test::TempDir dir;
  const std::string sock = dir.file("s.sock");
  // A by-path name as udev makes them (':' inside), of a camera that is not there.
  const std::string camera = "/dev/v4l/by-path/pci-0000:00:14.0-usb-0:9:1.0-video-index0-aisrv-test-absent";
  test::ServerProcess server{{AISRV_TEST_SERVER, "--listen", "unix:" + sock, "--engines", "1", "--sensor",
                              "0=v4l2:" + camera + ":640x480:YUYV"},
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
  auto r = cli({"acquire", "single"});
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.err.find(camera + " is absent (No such file or directory); it is opened when it appears") !=
                    std::string::npos,
                r.err);
  // The engine still infers.
  const std::string input = dir.file("in.bin");
  std::ofstream(input, std::ios::binary) << std::string("\x01\x02\x03\x04", 4);
  r = cli({"infer", "--input", input});
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  const std::string text = server.log();
  CHECK_MESSAGE(text.find("absent now; opened at the first acquisition after it appears") != std::string::npos, text);
  CHECK(server.stop() == 0);
}
