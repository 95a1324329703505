// aisrv phy/usb — the FunctionFS descriptor and string blobs written to ep0: one vendor-specific interface
// (class 0xFF, subclass 'A', protocol 1, named "aisrv") with a bulk OUT endpoint (FunctionFS file ep1) and a bulk IN
// endpoint (ep2), for full speed (64-byte packets), high speed (512) and super speed (1024, with companion
// descriptors). Layout: linux/usb/functionfs.h, FUNCTIONFS_DESCRIPTORS_MAGIC_V2 and FUNCTIONFS_STRINGS_MAGIC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aisrv::phy::usb {

// Endpoint addresses inside the function; the UDC assigns the real ones (hosts read them from the descriptors).
inline constexpr uint8_t kFfsEndpointOut = 0x01;
inline constexpr uint8_t kFfsEndpointIn = 0x82;
// File names FunctionFS gives the endpoints, in descriptor order.
inline constexpr const char* kFfsFileOut = "ep1";
inline constexpr const char* kFfsFileIn = "ep2";

// `subclass`/`protocol` default to the aisrv interface; other values describe a plain vendor interface.
std::vector<uint8_t> ffs_descriptors(uint8_t subclass = 0x41, uint8_t protocol = 0x01);
// Strings of language 0x0409: the interface name.
std::vector<uint8_t> ffs_strings(const std::string& interface_name);

}  // namespace aisrv::phy::usb
