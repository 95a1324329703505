// aisrv phy/usb — FunctionFS descriptor and string blobs, written field by field in USB (little-endian) order.
#include "aisrv/phy/ffs_descriptors.hpp"

#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>

#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/usb_link.hpp"

namespace aisrv::phy::usb {

namespace {

void interface_descriptor(protocol::ByteWriter& w, uint8_t subclass, uint8_t protocol) {
  w.u8(USB_DT_INTERFACE_SIZE);
  w.u8(USB_DT_INTERFACE);
  w.u8(0);  // bInterfaceNumber (FunctionFS renumbers)
  w.u8(0);  // bAlternateSetting
  w.u8(2);  // bNumEndpoints
  w.u8(protocol::usb::kInterfaceClass);
  w.u8(subclass);
  w.u8(protocol);
  w.u8(1);  // iInterface: string 1 of ffs_strings()
}

void bulk_endpoint(protocol::ByteWriter& w, uint8_t address, uint16_t max_packet) {
  w.u8(USB_DT_ENDPOINT_SIZE);
  w.u8(USB_DT_ENDPOINT);
  w.u8(address);
  w.u8(USB_ENDPOINT_XFER_BULK);
  w.u16(max_packet);
  w.u8(0);  // bInterval (unused for bulk)
}

void ss_companion(protocol::ByteWriter& w) {
  w.u8(USB_DT_SS_EP_COMP_SIZE);
  w.u8(USB_DT_SS_ENDPOINT_COMP);
  w.u8(0);    // bMaxBurst: one packet per burst (safe on every UDC)
  w.u8(0);    // bmAttributes: no streams
  w.u16(0);   // wBytesPerInterval (periodic endpoints only)
}

}  // namespace

std::vector<uint8_t> ffs_descriptors(uint8_t subclass, uint8_t protocol) {
  std::vector<uint8_t> body;
  protocol::ByteWriter w(body);
  w.u32(3);  // full-speed descriptor count
  w.u32(3);  // high speed
  w.u32(5);  // super speed
  for (uint16_t mps : {uint16_t{64}, uint16_t{512}}) {
    interface_descriptor(w, subclass, protocol);
    bulk_endpoint(w, kFfsEndpointOut, mps);
    bulk_endpoint(w, kFfsEndpointIn, mps);
  }
  interface_descriptor(w, subclass, protocol);
  bulk_endpoint(w, kFfsEndpointOut, 1024);
  ss_companion(w);
  bulk_endpoint(w, kFfsEndpointIn, 1024);
  ss_companion(w);

  std::vector<uint8_t> blob;
  protocol::ByteWriter h(blob);
  h.u32(FUNCTIONFS_DESCRIPTORS_MAGIC_V2);
  h.u32(static_cast<uint32_t>(12 + body.size()));
  h.u32(FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC | FUNCTIONFS_HAS_SS_DESC);
  h.bytes(body);
  return blob;
}

std::vector<uint8_t> ffs_strings(const std::string& interface_name) {
  std::vector<uint8_t> blob;
  protocol::ByteWriter w(blob);
  w.u32(FUNCTIONFS_STRINGS_MAGIC);
  w.u32(static_cast<uint32_t>(16 + 2 + interface_name.size() + 1));
  w.u32(1);  // str_count
  w.u32(1);  // lang_count
  w.u16(0x0409);
  w.bytes(std::span(reinterpret_cast<const uint8_t*>(interface_name.data()), interface_name.size()));
  w.u8(0);
  return blob;
}

}  // namespace aisrv::phy::usb

static_assert(aisrv::protocol::usb::kInterfaceSubClass == 0x41 && aisrv::protocol::usb::kInterfaceProtocol == 0x01,
              "ffs_descriptors() defaults must name the aisrv interface");
