// aisrv tests — discovery on directory trees shaped like /sys/class/hailo_chardev and /dev (none, one, several devices,
// unreadable and malformed attributes, nodes only in /dev, a non-Hailo-8 accelerator) and of the scan / identify tools
// on top of them with the driver test double.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "aisrv/engine/hailo8/driver/device_tools.hpp"
#include "aisrv/engine/hailo8/driver/discovery.hpp"
#include "hailo_device_tree.hpp"
#include "hailo_driver_double.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::driver;
using aisrv::test::control_response;
using aisrv::test::HailoDriverDouble;
namespace fs = std::filesystem;

namespace {

using Tree = aisrv::test::HailoDeviceTree;

void identifiable(HailoDriverDouble& fake, const std::string& path) {
  auto& n = fake.node(path);
  n.responses[0] = control_response(0, test::identify_params());
  n.responses[51] = control_response(51, test::device_information_params());
}

}  // namespace

TEST_CASE("no driver, no nodes: nothing found, and the tools say where they looked") {
  Tree t;
  auto found = discover(t.paths);
  REQUIRE(found.ok());
  CHECK(found->empty());
  HailoDriverDouble fake;
  auto s = scan(fake, t.paths);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == Errc::not_found);
  CHECK(s.error().message == "no Hailo-8 device found (looked in " + t.paths.sysfs_class.string() + " and " +
                                 t.paths.dev_dir.string() + "/hailo*)");
  auto id = identify(fake, std::nullopt, t.paths);
  REQUIRE_FALSE(id);
  CHECK(id.error().code == Errc::not_found);
  CHECK(id.error().message == s.error().message);
  // the default paths give the documented text
  CHECK(no_device_message() == "no Hailo-8 device found (looked in /sys/class/hailo_chardev and /dev/hailo*)");
}

TEST_CASE("one device: attributes read, node found") {
  Tree t;
  t.device("hailo0", "0000:01:00.0");
  auto found = discover(t.paths);
  REQUIRE(found.ok());
  REQUIRE(found->size() == 1);
  const auto& d = (*found)[0];
  CHECK(d.name == "hailo0");
  CHECK(d.dev_path == t.dev("hailo0"));
  CHECK(d.in_sysfs);
  CHECK(d.node_exists);
  CHECK(d.board_location == "0000:01:00.0");
  CHECK(d.device_id == "1e60:2864");
  CHECK(d.accelerator_type == 0u);
  CHECK(d.notes.empty());
  CHECK(d.maybe_hailo8());
}

TEST_CASE("several devices come back in number order, with newline-terminated attributes trimmed") {
  Tree t;
  t.device("hailo10", "0000:0a:00.0\n");
  t.device("hailo2", "0000:03:00.0\n");
  t.device("hailo0", "0000:01:00.0");
  auto found = discover(t.paths);
  REQUIRE(found.ok());
  REQUIRE(found->size() == 3);
  CHECK((*found)[0].name == "hailo0");
  CHECK((*found)[1].name == "hailo2");
  CHECK((*found)[2].name == "hailo10");
  CHECK((*found)[2].board_location == "0000:0a:00.0");
}

TEST_CASE("unreadable, missing and malformed attributes are noted, not fatal") {
  Tree t;
  t.device("hailo0", "0000:01:00.0", "1e60:2864", "x1");
  fs::remove(t.paths.sysfs_class / "hailo0" / "device_id");
  fs::remove(t.paths.sysfs_class / "hailo0" / "board_location");
  fs::create_directories(t.paths.sysfs_class / "hailo0" / "board_location");  // read() fails with EISDIR
  auto found = discover(t.paths);
  REQUIRE(found.ok());
  REQUIRE(found->size() == 1);
  const auto& d = (*found)[0];
  CHECK_FALSE(d.board_location.has_value());
  CHECK_FALSE(d.device_id.has_value());
  CHECK_FALSE(d.accelerator_type.has_value());
  REQUIRE(d.notes.size() == 3);
  CHECK(d.notes[0] == "board_location unreadable: Is a directory");
  CHECK(d.notes[1] == "device_id unreadable: No such file or directory");
  CHECK(d.notes[2] == "accelerator_type 'x1' is not a number");
  CHECK(d.maybe_hailo8());  // nothing says it is something else

  if (::geteuid() != 0) {  // permission bits do not stop root
    t.device("hailo1", "0000:02:00.0");
    fs::permissions(t.paths.sysfs_class / "hailo1" / "device_id", fs::perms::none);
    auto again = discover(t.paths);
    REQUIRE(again.ok());
    CHECK((*again)[1].notes.at(0) == "device_id unreadable: Permission denied");
  }
}

TEST_CASE("a node present only in /dev, and a class entry whose node is missing") {
  Tree t;
  t.write(t.paths.dev_dir / "hailo3", "");
  t.write(t.paths.dev_dir / "hailox", "");   // not a hailo<N> node
  t.write(t.paths.dev_dir / "null", "");
  auto only_dev = discover(t.paths);
  REQUIRE(only_dev.ok());
  REQUIRE(only_dev->size() == 1);
  CHECK((*only_dev)[0].name == "hailo3");
  CHECK_FALSE((*only_dev)[0].in_sysfs);
  CHECK((*only_dev)[0].node_exists);
  CHECK((*only_dev)[0].notes.at(0) == t.paths.sysfs_class.string() + " does not exist");

  t.device("hailo0", "0000:01:00.0", "1e60:2864", "0", /*node=*/false);
  auto both = discover(t.paths);
  REQUIRE(both.ok());
  REQUIRE(both->size() == 2);
  CHECK((*both)[0].name == "hailo0");
  CHECK_FALSE((*both)[0].node_exists);
  CHECK((*both)[0].notes.at(0) == "device node " + t.dev("hailo0") + " is missing");
  CHECK((*both)[1].notes.at(0) == "not listed in " + t.paths.sysfs_class.string());
}

TEST_CASE("scan identifies each Hailo-8 and leaves other accelerators out") {
  Tree t;
  t.device("hailo0", "0000:01:00.0");
  t.device("hailo1", "0000:02:00.0", "1e60:45c4", "1");  // a SoC accelerator (Hailo-15/10)
  t.device("hailo2", "0000:03:00.0");
  HailoDriverDouble fake;
  identifiable(fake, t.dev("hailo0"));
  fake.node(t.dev("hailo2")).open_errno = EACCES;
  auto s = scan(fake, t.paths);
  REQUIRE(s.ok());
  REQUIRE(s->size() == 2);
  CHECK((*s)[0].identity.has_value());
  CHECK((*s)[0].driver == DriverVersion{4, 23, 0});
  CHECK_FALSE((*s)[1].identity.has_value());
  CHECK((*s)[1].problem == "cannot open " + t.dev("hailo2") + ": Permission denied");
  const std::string text = format_scan(*s);
  CHECK(text.find("[-] " + t.dev("hailo0") +
                  "  PCI 0000:01:00.0  id 1e60:2864  driver 4.23.0  HAILO8  board 'Hailo-8'  firmware 4.23.0 "
                  "(release,app)  serial HLLWM2B233500123\n") != std::string::npos);
  CHECK(text.find("    not identified: cannot open " + t.dev("hailo2") + ": Permission denied\n") != std::string::npos);

  Tree only_soc;
  only_soc.device("hailo0", "0000:01:00.0", "1e60:45c4", "1");
  auto none = scan(fake, only_soc.paths);
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find("; other Hailo accelerators present: hailo0 (accelerator type 1, PCI id 1e60:45c4)") !=
        std::string::npos);
}

TEST_CASE("identify: first Hailo-8 found, or the given node") {
  Tree t;
  t.device("hailo0", "0000:01:00.0");
  HailoDriverDouble fake;
  identifiable(fake, t.dev("hailo0"));
  auto r = identify(fake, std::nullopt, t.paths);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(r->path == t.dev("hailo0"));
  const std::string text = format_identify(*r);
  CHECK(text.find("Firmware Version: 4.23.0 (release,app)\n") != std::string::npos);
  CHECK(text.find("Board Name: Hailo-8\n") != std::string::npos);
  CHECK(text.find("Device Architecture: HAILO8\n") != std::string::npos);
  CHECK(text.find("Serial Number: HLLWM2B233500123\n") != std::string::npos);
  CHECK(text.find("Driver Version: 4.23.0 (ioctl layout 4.21-4.23)\n") != std::string::npos);
  CHECK(text.find("Neural Network Core Clock Rate: 400MHz\n") != std::string::npos);
  CHECK(text.find("Boot source: PCIE\n") != std::string::npos);

  auto missing = identify(fake, std::string("/dev/hailo7"), t.paths);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Errc::not_found);
  CHECK(missing.error().message ==
        "no Hailo-8 device at /dev/hailo7 (cannot open /dev/hailo7: No such file or directory)");

  // GET_DEVICE_INFORMATION refused by the firmware: identify still reports, saying why the rest is missing
  fake.node(t.dev("hailo0")).responses[51] = control_response(51, {}, 0x9, 0x1);
  auto partial = identify(fake, t.dev("hailo0"), t.paths);
  REQUIRE(partial.ok());
  CHECK_FALSE(partial->information.has_value());
  CHECK(format_identify(*partial).find("Device information: unavailable (" + t.dev("hailo0") +
                                       ": firmware refused GET_DEVICE_INFORMATION: major status 0x9, minor status "
                                       "0x1)") != std::string::npos);
}
