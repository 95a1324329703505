// aisrv tests — the FunctionFS descriptor and string blobs parsed back field by field, and the USB --connect targets.
#include <doctest/doctest.h>

#include <linux/usb/functionfs.h>

#include "aisrv/client/usb_transport.hpp"
#include "aisrv/phy/ffs_descriptors.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/usb_link.hpp"

using namespace aisrv;

namespace {

void check_interface(protocol::ByteReader& r) {
  CHECK(r.u8("bLength") == 9);
  CHECK(r.u8("bDescriptorType") == 4);
  CHECK(r.u8("bInterfaceNumber") == 0);
  CHECK(r.u8("bAlternateSetting") == 0);
  CHECK(r.u8("bNumEndpoints") == 2);
  CHECK(r.u8("bInterfaceClass") == 0xFF);
  CHECK(r.u8("bInterfaceSubClass") == 0x41);
  CHECK(r.u8("bInterfaceProtocol") == 0x01);
  CHECK(r.u8("iInterface") == 1);
}

void check_endpoint(protocol::ByteReader& r, uint8_t address, uint16_t mps) {
  CHECK(r.u8("bLength") == 7);
  CHECK(r.u8("bDescriptorType") == 5);
  CHECK(r.u8("bEndpointAddress") == address);
  CHECK(r.u8("bmAttributes") == 2);  // bulk
  CHECK(r.u16("wMaxPacketSize") == mps);
  CHECK(r.u8("bInterval") == 0);
}

void check_companion(protocol::ByteReader& r) {
  CHECK(r.u8("bLength") == 6);
  CHECK(r.u8("bDescriptorType") == 0x30);
  CHECK(r.u8("bMaxBurst") == 0);
  CHECK(r.u8("bmAttributes") == 0);
  CHECK(r.u16("wBytesPerInterval") == 0);
}

}  // namespace

TEST_CASE("FunctionFS descriptors: v2 header, full/high/super speed, one vendor interface, bulk OUT + IN") {
  const auto blob = phy::usb::ffs_descriptors();
  protocol::ByteReader r(blob);
  CHECK(r.u32("magic") == FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
  CHECK(r.u32("length") == blob.size());
  CHECK(r.u32("flags") == (FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC | FUNCTIONFS_HAS_SS_DESC));
  CHECK(r.u32("fs_count") == 3);
  CHECK(r.u32("hs_count") == 3);
  CHECK(r.u32("ss_count") == 5);
  for (uint16_t mps : {uint16_t{64}, uint16_t{512}}) {
    CAPTURE(mps);
    check_interface(r);
    check_endpoint(r, 0x01, mps);
    check_endpoint(r, 0x82, mps);
  }
  check_interface(r);
  check_endpoint(r, 0x01, 1024);
  check_companion(r);
  check_endpoint(r, 0x82, 1024);
  check_companion(r);
  CHECK(r.status().ok());
}

TEST_CASE("FunctionFS strings: one language, the interface name") {
  const auto blob = phy::usb::ffs_strings("aisrv");
  protocol::ByteReader r(blob);
  CHECK(r.u32("magic") == FUNCTIONFS_STRINGS_MAGIC);
  CHECK(r.u32("length") == blob.size());
  CHECK(r.u32("str_count") == 1);
  CHECK(r.u32("lang_count") == 1);
  CHECK(r.u16("lang") == 0x0409);
  auto s = r.bytes(6, "string");
  CHECK(std::string(s.begin(), s.end()) == std::string("aisrv", 6));
  CHECK(r.status().ok());
}

TEST_CASE("USB connect targets") {
  auto any = client::parse_usb_target("usb");
  REQUIRE(any.ok());
  CHECK(!any->vendor_id);
  CHECK(any->to_string() == "usb");
  auto ids = client::parse_usb_target("usb:1209:0001");
  REQUIRE(ids.ok());
  CHECK(*ids->vendor_id == 0x1209);
  CHECK(*ids->product_id == 0x0001);
  CHECK(ids->serial.empty());
  auto full = client::parse_usb_target("usb:0x1d6b:104:AB:CD-1");
  REQUIRE(full.ok());
  CHECK(*full->vendor_id == 0x1d6b);
  CHECK(*full->product_id == 0x0104);
  CHECK(full->serial == "AB:CD-1");
  CHECK(full->to_string() == "usb:1d6b:0104:AB:CD-1");
  for (const char* bad : {"usb:", "usb:1209", "usb:12345:1", "usb:xyz:1", "usb:1209:", "usb:1209:1:", "usbx",
                          "usb:1209:0001x"}) {
    CAPTURE(bad);
    auto r = client::parse_usb_target(bad);
    REQUIRE(!r.ok());
    CHECK(r.error().code == Errc::invalid_argument);
  }
}
