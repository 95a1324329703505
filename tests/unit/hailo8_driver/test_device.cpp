// aisrv tests — the device layer against the driver test double: version acceptance and refusal (every supported
// version, HailoRT's single-version policy not copied), board checks, the FW_CONTROL ioctl argument (request bytes,
// MD5, CPU, timeout) and the failures a driver can produce (bad MD5, overlong/short responses, ENOTTY, firmware
// errors, firmware versions we do not know).
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/common/digest.hpp"
#include "aisrv/engine/hailo8/driver/device.hpp"
#include "aisrv/engine/hailo8/driver/driver_version.hpp"
#include "hailo_driver_double.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8::driver;
namespace common = aisrv::engine::hailo8::common;
using aisrv::test::control_response;
using aisrv::test::HailoDriverDouble;

namespace {

HailoDriverDouble::Node& hailo8(HailoDriverDouble& fake, const std::string& path, uint32_t major = 4, uint32_t minor = 23,
                              uint32_t rev = 0) {
  auto& n = fake.node(path);
  n.version[0] = major;
  n.version[1] = minor;
  n.version[2] = rev;
  n.responses[0] = control_response(0, test::identify_params(major, minor, rev));
  n.responses[51] = control_response(51, test::device_information_params());
  return n;
}

}  // namespace

TEST_CASE("every supported driver version selects its ioctl layout; others are refused by name") {
  struct Case {
    DriverVersion v;
    DriverAbi abi;
  };
  for (const Case& c : {Case{{4, 18, 0}, DriverAbi::v4_18}, Case{{4, 18, 1}, DriverAbi::v4_18},
                        Case{{4, 19, 0}, DriverAbi::v4_18}, Case{{4, 20, 0}, DriverAbi::v4_18},
                        Case{{4, 20, 1}, DriverAbi::v4_18}, Case{{4, 21, 0}, DriverAbi::current},
                        Case{{4, 21, 1}, DriverAbi::current}, Case{{4, 22, 0}, DriverAbi::current},
                        Case{{4, 23, 0}, DriverAbi::current}}) {
    auto abi = select_abi(c.v);
    REQUIRE_MESSAGE(abi.ok(), c.v.str());
    CHECK(*abi == c.abi);
  }
  for (const DriverVersion v : {DriverVersion{4, 17, 1}, DriverVersion{4, 23, 1}, DriverVersion{4, 24, 0},
                                DriverVersion{5, 0, 0}, DriverVersion{0, 0, 0}}) {
    auto abi = select_abi(v);
    REQUIRE_FALSE(abi);
    CHECK(abi.error().code == Errc::incompatible);
    CHECK(abi.error().message ==
          "hailo_pci driver " + v.str() +
              " is not supported (supported driver versions: 4.18.0, 4.18.1, 4.19.0, 4.20.0, 4.20.1, 4.21.0, 4.21.1, "
              "4.22.0, 4.23.0)");
  }
  // MEMORY_TRANSFER exists up to 4.22 and is gone in 4.23; LAUNCH_TRANSFER changed number with its layout
  CHECK(ioctl_numbers({4, 22, 0}, DriverAbi::current).memory_transfer == 0xd0186700);
  CHECK(ioctl_numbers({4, 23, 0}, DriverAbi::current).memory_transfer == 0);
  CHECK(ioctl_numbers({4, 20, 1}, DriverAbi::v4_18).vdma_launch_transfer == 0xc041760f);
  CHECK(ioctl_numbers({4, 21, 0}, DriverAbi::current).vdma_launch_transfer == 0x8099760f);
  CHECK(ioc::size_of(kIoctlsCurrent.fw_control) == 1528);
  CHECK(ioc::size_of(kIoctlsV4_18.vdma_interrupts_wait) == 685);
}

TEST_CASE("open + identify on a 4.23 driver: request bytes, MD5, CPU and timeout in the FW_CONTROL argument") {
  HailoDriverDouble fake;
  auto& node = hailo8(fake, "/dev/hailo0");
  auto dev = HailoDevice::open("/dev/hailo0", fake);
  REQUIRE_MESSAGE(dev.ok(), (dev.ok() ? std::string() : dev.error().message));
  CHECK(dev->driver_version() == DriverVersion{4, 23, 0});
  CHECK(dev->abi() == DriverAbi::current);
  CHECK(dev->properties().desc_max_page_size == 16384);
  CHECK(dev->properties().fw_loaded);

  auto id = dev->identify();
  REQUIRE_MESSAGE(id.ok(), (id.ok() ? std::string() : id.error().message));
  CHECK(id->firmware.str() == "4.23.0 (release,app)");
  CHECK(id->board_name == "Hailo-8");
  REQUIRE(node.calls.size() == 1);
  const auto& call = node.calls[0];
  // version 2, flags 0, sequence 1 (the device's first control), opcode 0 (IDENTIFY), no parameters
  CHECK(call.request == std::vector<uint8_t>{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
  CHECK(common::hex(std::span<const uint8_t>(call.md5, 16)) == "07b94e01f08c545ec42917fe57b211df");
  CHECK(call.cpu_id == 0);
  CHECK(call.timeout_ms == 1000);

  auto info = dev->device_information();
  REQUIRE(info.ok());
  CHECK(info->neural_network_core_clock_rate == 400000000u);
  REQUIRE(node.calls.size() == 2);
  CHECK(node.calls[1].request[15] == 51);
  CHECK(node.calls[1].request[11] == 2);  // the next sequence number
}

TEST_CASE("a signal during FW_CONTROL: reported as interrupted, never resent; a late answer is not taken for another") {
  HailoDriverDouble fake;
  auto& node = hailo8(fake, "/dev/hailo0");
  auto dev = HailoDevice::open("/dev/hailo0", fake);
  REQUIRE(dev.ok());
  REQUIRE(dev->identify().ok());
  const size_t before = node.calls.size();

  // The driver accepted the control, then the wait for the answer was interrupted: exactly one control reached the
  // firmware and the caller learns it was interrupted (hailo_pci: hailo_fw_control waits interruptibly; HailoRT
  // returns HAILO_DRIVER_INTERRUPTED and does not resend).
  node.eintr_after_accept = 1;
  node.late_answer = true;
  auto info = dev->device_information();
  REQUIRE_FALSE(info.ok());
  CHECK(info.error().code == Errc::interrupted);
  CHECK(info.error().message.find("GET_DEVICE_INFORMATION") != std::string::npos);
  CHECK(info.error().message.find("not sent again") != std::string::npos);
  CHECK(node.calls.size() == before + 1);

  // The next control is answered first with the firmware's late answer to the interrupted one: its sequence number
  // differs, so it is refused rather than taken as this control's answer.
  auto again = dev->device_information();
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == Errc::protocol_error);
  CHECK_MESSAGE(again.error().message.find("answered as sequence") != std::string::npos, again.error().message);
  // Sequence numbers are never reused: three different ones went out.
  CHECK(node.calls.size() == before + 2);
  CHECK(node.calls[before].request[11] != node.calls[before + 1].request[11]);
  // And the link is usable afterwards.
  auto third = dev->device_information();
  REQUIRE_MESSAGE(third.ok(), (third ? "" : third.error().message));
}

TEST_CASE("a 4.20 driver (older layout) is accepted and identifies the same way") {
  HailoDriverDouble fake;
  hailo8(fake, "/dev/hailo1", 4, 20, 1);
  auto dev = HailoDevice::open("/dev/hailo1", fake);
  REQUIRE(dev.ok());
  CHECK(dev->abi() == DriverAbi::v4_18);
  CHECK(dev->ioctls().vdma_interrupts_wait == 0xc2ad7602);
  auto id = dev->identify();
  REQUIRE(id.ok());
  CHECK(id->firmware.minor == 20);
  CHECK(dev->device_information().ok());
}

TEST_CASE("unsupported driver, wrong board, missing firmware, failing ioctls") {
  HailoDriverDouble fake;
  hailo8(fake, "/dev/hailo0", 4, 24, 0);
  auto v = HailoDevice::open("/dev/hailo0", fake);
  REQUIRE_FALSE(v);
  CHECK(v.error().code == Errc::incompatible);
  CHECK(v.error().message.find("/dev/hailo0: hailo_pci driver 4.24.0 is not supported (supported driver versions: "
                               "4.18.0") == 0);

  auto& soc = hailo8(fake, "/dev/hailo1");
  soc.board_type = 3;
  auto b = HailoDevice::open("/dev/hailo1", fake);
  REQUIRE_FALSE(b);
  CHECK(b.error().message == "/dev/hailo1: board type 3 is not a Hailo-8 (board type 0)");
  CHECK(b.error().code == Errc::not_supported);
  auto& other_bus = hailo8(fake, "/dev/hailo5");
  other_bus.dma_type = 1;
  auto o = HailoDevice::open("/dev/hailo5", fake);
  REQUIRE_FALSE(o);
  CHECK(o.error().code == Errc::not_supported);
  CHECK(o.error().message == "/dev/hailo5: DMA type 1 is not PCIe (0)");

  auto& nofw = hailo8(fake, "/dev/hailo2");
  nofw.fw_loaded = 0;
  auto d = HailoDevice::open("/dev/hailo2", fake);
  REQUIRE(d.ok());
  auto id = d->identify();
  REQUIRE_FALSE(id);
  CHECK(id.error().message.find("no firmware loaded") != std::string::npos);

  auto& tty = hailo8(fake, "/dev/hailo3");
  tty.fail_ioctl = static_cast<int>(HailoDriverDouble::kQueryDriverInfo);
  auto t = HailoDevice::open("/dev/hailo3", fake);
  REQUIRE_FALSE(t);
  CHECK(t.error().message ==
        "/dev/hailo3: QUERY_DRIVER_INFO failed: the driver does not know this ioctl (ENOTTY: driver/ABI mismatch)");
  CHECK(t.error().code == Errc::incompatible);

  auto& perm = fake.node("/dev/hailo4");
  perm.open_errno = EACCES;
  auto p = HailoDevice::open("/dev/hailo4", fake);
  REQUIRE_FALSE(p);
  CHECK(p.error().code == Errc::io_error);
  CHECK(p.error().message == "cannot open /dev/hailo4: Permission denied");
  CHECK(HailoDevice::open("/dev/hailo9", fake).error().code == Errc::not_found);
}

TEST_CASE("FW_CONTROL responses that fail the MD5 check, overrun the buffer, or are cut short are refused") {
  HailoDriverDouble fake;
  auto& node = hailo8(fake, "/dev/hailo0");
  auto dev = HailoDevice::open("/dev/hailo0", fake);
  REQUIRE(dev.ok());

  node.corrupt_md5 = true;
  auto bad = dev->identify();
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Errc::protocol_error);
  CHECK(bad.error().message.find("/dev/hailo0: FW_CONTROL IDENTIFY response failed its MD5 check (driver sent ") == 0);
  node.corrupt_md5 = false;

  node.force_len = 1600;
  auto over = dev->identify();
  REQUIRE_FALSE(over);
  CHECK(over.error().message.find("response length 1600 exceeds the 1500 byte buffer") != std::string::npos);

  // 10 bytes of response with the MD5 of the whole response: caught by the MD5 check before parsing
  node.force_len = 10;
  auto cut = dev->identify();
  REQUIRE_FALSE(cut);
  CHECK(cut.error().message.find("MD5") != std::string::npos);
  node.force_len = 0;

  // a well-formed but short answer (MD5 right) fails in parsing
  const auto full = control_response(0, {});
  node.responses[0] = std::vector<uint8_t>(full.begin(), full.begin() + 20);
  auto shorter = dev->identify();
  REQUIRE_FALSE(shorter);
  CHECK(shorter.error().message.find("20 bytes, shorter than the 24 byte header") != std::string::npos);

  // firmware error status
  node.responses[0] = control_response(0, {}, 0x5, 0x6);
  auto refused = dev->identify();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message == "/dev/hailo0: firmware refused IDENTIFY: major status 0x5, minor status 0x6");

  // the device still works afterwards
  node.responses[0] = control_response(0, test::identify_params());
  CHECK(dev->identify().ok());
}

TEST_CASE("non-critical controls need a firmware version we know; IDENTIFY always works") {
  HailoDriverDouble fake;
  auto& node = hailo8(fake, "/dev/hailo0");
  node.responses[0] = control_response(0, test::identify_params(4, 17, 0));  // firmware older than any driver we know
  auto dev = HailoDevice::open("/dev/hailo0", fake);
  REQUIRE(dev.ok());
  auto info = dev->device_information();
  REQUIRE_FALSE(info);
  CHECK(info.error().code == Errc::incompatible);
  CHECK(info.error().message.find("firmware 4.17.0 is not a version whose controls we know") != std::string::npos);
  REQUIRE(node.calls.size() == 1);  // only the IDENTIFY went out
  CHECK(node.calls[0].request[15] == 0);

  // context-switch opcodes go to the core CPU
  node.responses[0] = control_response(0, test::identify_params());
  node.responses[72] = control_response(72, {std::vector<uint8_t>(19, 0)});
  auto dev2 = HailoDevice::open("/dev/hailo0", fake);
  REQUIRE(dev2.ok());
  auto consts = dev2->control(72);
  REQUIRE(consts.ok());
  CHECK(node.calls.back().cpu_id == 1);
  CHECK(consts->params.at(0).size() == 19);
}

TEST_CASE("the driver double refuses a FW_CONTROL longer than the driver's maximum, as hailo_pci does") {
  // hailo_pci (linux/pcie nnc.c, fw_control): a buffer_len above MAX_CONTROL_LENGTH (1500) is refused with EINVAL
  // before anything reaches the chip. The double does the same, and the product never builds such a request.
  HailoDriverDouble fake;
  auto& node = hailo8(fake, "/dev/hailo0");
  auto file = fake.open("/dev/hailo0");
  REQUIRE(file.ok());
  std::vector<uint8_t> arg(1528, 0);
  const uint32_t too_long = 1501;
  std::memcpy(arg.data() + 16, &too_long, 4);
  CHECK((*file)->ioctl(aisrv::test::HailoDriverDouble::kFwControl, arg.data(), Restart::never) == EINVAL);
  CHECK(node.calls.empty());  // nothing reached the "chip"
  const std::vector<uint8_t> big(1500, 0);
  const std::vector<std::vector<uint8_t>> params{big};
  auto request = build_control_request(static_cast<uint32_t>(ControlOpcode::identify), params, 1);
  REQUIRE_FALSE(request.ok());  // 16-byte header + count + length + 1500 bytes > 1500
}
