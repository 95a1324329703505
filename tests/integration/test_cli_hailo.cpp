// Integration tests: `aisrv hailo scan` / `aisrv hailo identify` as a user runs them on a machine without a
// Hailo-8 (this one): the "no device" message and exit code, JSON errors, and what happens with a node that is not
// the hailo_pci driver (a plain file: ioctl answers ENOTTY). The sysfs and /dev roots are moved to private trees
// with AISRV_HAILO_SYSFS_CLASS / AISRV_HAILO_DEV_DIR.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "process.hpp"

using namespace aisrv;
namespace fs = std::filesystem;

namespace {

test::RunResult hailo(std::vector<std::string> args, const test::TempDir& dir) {
  std::vector<std::string> full{AISRV_CLI};
  full.insert(full.end(), args.begin(), args.end());
  return test::run(full, std::chrono::seconds(30),
                   {"AISRV_HAILO_SYSFS_CLASS=" + dir.file("class"), "AISRV_HAILO_DEV_DIR=" + dir.file("dev")});
}

}  // namespace

TEST_CASE("no device: scan and identify say where they looked and exit 3") {
  test::TempDir dir;
  const std::string msg =
      "no Hailo-8 device found (looked in " + dir.file("class") + " and " + dir.file("dev") + "/hailo*)";
  auto s = hailo({"hailo", "scan"}, dir);
  CHECK(s.exit_code == 3);
  CHECK(s.err == "aisrv: " + msg + " (not_found)\n");
  auto i = hailo({"hailo", "identify"}, dir);
  CHECK(i.exit_code == 3);
  CHECK(i.err == "aisrv: " + msg + " (not_found)\n");
  auto j = hailo({"--json", "hailo", "scan"}, dir);
  CHECK(j.exit_code == 3);
  auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["error"]["code"] == "not_found");
  CHECK(doc["error"]["message"] == msg);
  auto d = hailo({"hailo", "identify", "--device", dir.file("dev") + "/hailo5"}, dir);
  CHECK(d.exit_code == 3);
  CHECK(d.err.find("no Hailo-8 device at " + dir.file("dev") + "/hailo5") != std::string::npos);
}

TEST_CASE("scan and identify document their exit codes in --help as docs/cli.md does") {
  const std::string codes = "Exit codes: 0 a Hailo-8 device was identified; 3 no Hailo-8 device was found, or none "
                            "answered";
  for (const char* sub : {"scan", "identify"}) {
    auto h = test::run({AISRV_CLI, "hailo", sub, "--help"});
    CHECK(h.exit_code == 0);
    std::string flat = h.out;  // CLI11 may wrap the footer
    for (auto& c : flat)
      if (c == '\n') c = ' ';
    CHECK_MESSAGE(flat.find(codes) != std::string::npos, sub << " --help: " << h.out);
  }
  std::ifstream doc(AISRV_DOCS_DIR "/cli.md");
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  CHECK(text.find("| `hailo scan` | the Hailo-8 devices on this machine (through the hailo_pci driver), each "
                  "identified; exit 0 when one was identified, 3 when none was found or none answered") !=
        std::string::npos);
}

TEST_CASE("the default places, on a machine without the driver") {
  if (fs::exists("/sys/class/hailo_chardev") || fs::exists("/dev/hailo0")) {
    MESSAGE("this machine has a Hailo driver or node; the no-device check does not apply");
    return;
  }
  auto r = test::run({AISRV_CLI, "hailo", "scan"});
  CHECK(r.exit_code == 3);
  CHECK(r.err == "aisrv: no Hailo-8 device found (looked in /sys/class/hailo_chardev and /dev/hailo*) (not_found)\n");
}

TEST_CASE("a node that is not the hailo_pci driver is listed but not identified") {
  test::TempDir dir;
  fs::create_directories(dir.file("class") + "/hailo0");
  fs::create_directories(dir.file("dev"));
  std::ofstream(dir.file("class") + "/hailo0/board_location") << "0000:01:00.0";
  std::ofstream(dir.file("class") + "/hailo0/device_id") << "1e60:2864";
  std::ofstream(dir.file("class") + "/hailo0/accelerator_type") << "0";
  std::ofstream(dir.file("dev") + "/hailo0") << "";  // a regular file: every ioctl fails with ENOTTY
  auto s = hailo({"hailo", "scan"}, dir);
  CHECK(s.exit_code == 3);  // found, none answered: as --help and docs/cli.md say
  CHECK(s.out.find("[-] " + dir.file("dev") + "/hailo0  PCI 0000:01:00.0  id 1e60:2864\n") != std::string::npos);
  CHECK(s.out.find("QUERY_DRIVER_INFO failed: the driver does not know this ioctl (ENOTTY") != std::string::npos);
  auto i = hailo({"hailo", "identify"}, dir);
  CHECK(i.exit_code == 3);
  CHECK(i.err.find(dir.file("dev") + "/hailo0: QUERY_DRIVER_INFO failed") != std::string::npos);
}
