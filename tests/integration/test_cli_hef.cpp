// Integration tests: `aisrv hef info` on the real HEFs of the test data — the parse-hef text on stdout (mnist.hef
// against its author's recorded hailortcli lines with the documented 4.23 difference), --streams, --json, a
// directory, and the exit codes and messages for broken files.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "process.hpp"
#include "testdata.hpp"

using namespace aisrv;
using aisrv::test::run;

namespace {
std::string data(const std::string& relative) { return test::testdata_path(relative).string(); }
}  // namespace

TEST_CASE("aisrv hef info prints hailortcli's parse-hef text") {
  const auto mnist = data("hef/codetam__hailo_project/mnist.hef");
  auto r = run({AISRV_CLI, "hef", "info", mnist});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out ==
        "Architecture HEF was compiled for: HAILO8\n"
        "Network group name: mnist, Single Context\n"
        "    Network name: mnist/mnist\n"
        "        VStream infos:\n"
        "            Input  mnist/input_layer1 UINT8, NC(784)\n"
        "            Output mnist/softmax1 UINT8, NC(10)\n");

  auto s = run({AISRV_CLI, "hef", "info", "--streams", mnist});
  CHECK(s.exit_code == 0);
  CHECK(s.out.find("        Stream infos:\n"
                   "            Input  mnist/input_layer1 UINT8, NC(784)\n"
                   "            Output mnist/softmax1 UINT8, NC(16)\n") != std::string::npos);

  auto j = run({AISRV_CLI, "--json", "hef", "info", mnist});
  CHECK(j.exit_code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["container"]["version"] == 0);
  CHECK(doc["container"]["proto_size"] == 1083618);
  CHECK(doc["sdk_version"] == "3.22.1");
  CHECK(doc["hw_arch"] == "HAILO8P");
  CHECK(doc["periph_calculation_in_hailort"] == false);
  CHECK(doc["network_groups"][0]["networks"][0]["outputs"][0]["name"] == "mnist/softmax1");
}

TEST_CASE("aisrv hef info on a directory and on broken files") {
  const auto dir = data("hef/GURUKARTHIKC__Takumi");
  auto r = run({AISRV_CLI, "hef", "info", dir});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind(std::string(80, '*') + "\nParsing " + dir + "/yolov8n.hef:\nArchitecture HEF was compiled for: "
                        "HAILO8\n",
                    0) == 0);
  CHECK(r.out.find("Output yolov8n/yolov8_nms_postprocess FLOAT32, HAILO NMS BY CLASS(number of classes: 110, "
                   "maximum bounding boxes per class: 100, maximum frame size: 220440)\n") != std::string::npos);

  const auto truncated = data("hef/invalid/darrr05__Major_Project-Raspberrypi03/yolov8n.hef");
  auto t = run({AISRV_CLI, "hef", "info", truncated});
  CHECK(t.exit_code == 1);
  CHECK(t.out.empty());
  CHECK(t.err == "aisrv: " + truncated +
                     ": HEF v0 file is shorter than its header says: the header declares a protobuf (10453729 bytes) "
                     "after the header, the file has 2883552 bytes (model_error)\n");

  auto both = run({AISRV_CLI, "hef", "info", data("hef/invalid/darrr05__Major_Project-Raspberrypi03")});
  CHECK(both.exit_code == 1);
  CHECK(both.out.find("Parsing ") != std::string::npos);
  CHECK(both.err.find("New1.hef: HEF v2 file is shorter than its header says") != std::string::npos);

  auto missing = run({AISRV_CLI, "hef", "info", "/nonexistent/x.hef"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "aisrv: /nonexistent/x.hef: no such file or directory (model_error)\n");
  CHECK(run({AISRV_CLI, "hef", "info"}).exit_code == 2);
}
