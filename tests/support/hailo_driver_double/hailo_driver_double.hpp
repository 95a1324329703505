// aisrv tests — test double of the hailo_pci driver for the driver-layer and backend tests: a DriverOpener whose device
// nodes answer QUERY_DRIVER_INFO, QUERY_DEVICE_PROPERTIES and FW_CONTROL like the real driver + firmware would. It
// decodes and encodes the ioctl arguments with its own byte offsets written from the facts (not with the product's
// structs), so a wrong struct definition in the product fails the tests. Knobs produce the failures a real device can
// show: an unknown ioctl (ENOTTY), a response with a bad MD5, short / overlong responses, firmware error statuses.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <openssl/evp.h>

#include "aisrv/engine/hailo8/driver/driver_file.hpp"

namespace aisrv::test {

// Firmware control responses, byte by byte: header {version, flags, sequence, opcode, major, minor} BE, then
// parameter_count and {length, bytes} parameters (all lengths BE).
inline void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}
inline void put_le32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 0; s < 32; s += 8) v.push_back(static_cast<uint8_t>(x >> s));
}
inline std::vector<uint8_t> be32_bytes(uint32_t x) {
  std::vector<uint8_t> v;
  put_be32(v, x);
  return v;
}
inline std::vector<uint8_t> text_bytes(const std::string& s, size_t pad_to = 0) {
  std::vector<uint8_t> v(s.begin(), s.end());
  if (v.size() < pad_to) v.resize(pad_to, 0);
  return v;
}
inline std::vector<uint8_t> control_response(uint32_t opcode, const std::vector<std::vector<uint8_t>>& params,
                                             uint32_t major = 0, uint32_t minor = 0, uint32_t flags = 1,
                                             uint32_t version = 2) {
  std::vector<uint8_t> r;
  put_be32(r, version);
  put_be32(r, flags);
  put_be32(r, 0);
  put_be32(r, opcode);
  put_be32(r, major);
  put_be32(r, minor);
  put_be32(r, static_cast<uint32_t>(params.size()));
  for (const auto& p : params) {
    put_be32(r, static_cast<uint32_t>(p.size()));
    r.insert(r.end(), p.begin(), p.end());
  }
  return r;
}

// IDENTIFY parameters of a Hailo-8 M.2 module with firmware `fw` (revision word as sent, flags included).
inline std::vector<std::vector<uint8_t>> identify_params(uint32_t major = 4, uint32_t minor = 23,
                                                         uint32_t revision_word = 0) {
  std::vector<uint8_t> fw;
  put_le32(fw, major);
  put_le32(fw, minor);
  put_le32(fw, revision_word);
  return {be32_bytes(2),       fw,
          be32_bytes(0),       text_bytes("Hailo-8", 32),
          be32_bytes(1),       text_bytes("HLLWM2B233500123", 16),
          text_bytes("HM218B1C2FAE", 16), text_bytes("HAILO-8 AI ACC M.2 M KEY MODULE EXT TEMP", 42)};
}

inline std::vector<std::vector<uint8_t>> device_information_params() {
  std::vector<uint8_t> features = be32_bytes(0x04);  // PCIe
  features.resize(8, 0);
  return {be32_bytes(400000000),
          features,
          be32_bytes(1),  // boot source PCIe
          {0x03},
          std::vector<uint8_t>(32, 0),
          {0, 0, 0, 0, 0, 0},
          {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC},
          std::vector<uint8_t>(24, 0),
          be32_bytes(0)};
}

class HailoDriverDouble final : public engine::hailo8::driver::DriverOpener {
 public:
  // Request numbers as the facts table gives them (4.23; FW_CONTROL and the queries are the same in 4.18-4.22).
  static constexpr uint32_t kQueryDeviceProperties = 0x40176701;
  static constexpr uint32_t kQueryDriverInfo = 0x400c6702;
  static constexpr uint32_t kFwControl = 0xc5f86e00;

  struct Recorded {
    std::vector<uint8_t> request;
    uint8_t md5[16];
    uint32_t timeout_ms;
    uint32_t cpu_id;
  };

  // Node state (one per path).
  struct Node {
    int open_errno = 0;  // ENOENT / EACCES …
    uint32_t version[3] = {4, 23, 0};
    uint16_t desc_max_page_size = 16384;
    uint32_t board_type = 0;
    uint32_t allocation_mode = 0;
    uint32_t dma_type = 0;
    uint64_t dma_engines = 1;
    uint8_t fw_loaded = 1;
    int fail_ioctl = 0;             // request number answered with `fail_errno`
    int fail_errno = ENOTTY;
    // FW control: opcode → response bytes (before corruption). Missing opcode → status error response.
    std::map<uint32_t, std::vector<uint8_t>> responses;
    bool corrupt_md5 = false;
    // hailo_pci copies a control to the chip, then waits interruptibly for the answer: a signal then gives EINTR
    // with the control already on the chip. The next `eintr_after_accept` controls are recorded (the firmware got
    // them) and answered EINTR; with `late_answer`, the control after such one first receives the firmware's late
    // answer to the interrupted control (its sequence number).
    int eintr_after_accept = 0;
    bool late_answer = false;
    std::vector<uint8_t> pending_answer;  // the interrupted control's answer, not yet collected
    uint32_t force_len = 0;  // when non-zero, reported buffer_len (e.g. 1600 or 10)
    std::vector<Recorded> calls;
  };

  Node& node(const std::string& path) { return nodes_[path]; }

  Result<std::unique_ptr<engine::hailo8::driver::DriverFile>> open(
      const std::string& path) override;

 private:
  class File;
  std::map<std::string, Node> nodes_;
};

class HailoDriverDouble::File final : public engine::hailo8::driver::DriverFile {
 public:
  explicit File(Node& n) : n_(n) {}

  // The double answers as the driver does whatever the caller's restart policy: EINTR is returned, the product
  // decides.
  int ioctl(uint32_t request, void* arg, engine::hailo8::driver::Restart) override {
    if (n_.fail_ioctl && static_cast<uint32_t>(n_.fail_ioctl) == request) return n_.fail_errno;
    auto* b = static_cast<uint8_t*>(arg);
    switch (request) {
      case kQueryDriverInfo:
        for (int i = 0; i < 3; ++i) std::memcpy(b + 4 * i, &n_.version[i], 4);
        return 0;
      case kQueryDeviceProperties:
        std::memcpy(b + 0, &n_.desc_max_page_size, 2);
        std::memcpy(b + 2, &n_.board_type, 4);
        std::memcpy(b + 6, &n_.allocation_mode, 4);
        std::memcpy(b + 10, &n_.dma_type, 4);
        std::memcpy(b + 14, &n_.dma_engines, 8);
        b[22] = n_.fw_loaded;
        return 0;
      case kFwControl:
        return fw_control(b);
      default:
        return ENOTTY;
    }
  }

 private:
  static void md5(const uint8_t* p, size_t n, uint8_t* out) {
    unsigned int len = 0;
    EVP_Digest(p, n, out, &len, EVP_md5(), nullptr);
  }

  // hailo_fw_control: md5[16] @0, buffer_len u32 @16, buffer[1500] @20, timeout_ms @1520, cpu_id @1524.
  int fw_control(uint8_t* b) {
    Recorded rec;
    uint32_t len = 0;
    std::memcpy(&len, b + 16, 4);
    if (len > 1500) return EINVAL;
    rec.request.assign(b + 20, b + 20 + len);
    std::memcpy(rec.md5, b, 16);
    std::memcpy(&rec.timeout_ms, b + 1520, 4);
    std::memcpy(&rec.cpu_id, b + 1524, 4);
    n_.calls.push_back(rec);

    // The driver passes the MD5 to the firmware, which rejects a mismatch; model that as a firmware error.
    uint8_t want[16];
    md5(rec.request.data(), rec.request.size(), want);
    uint32_t opcode = 0;
    if (len >= 16) opcode = (uint32_t{rec.request[12]} << 24) | (uint32_t{rec.request[13]} << 16) |
                            (uint32_t{rec.request[14]} << 8) | rec.request[15];
    std::vector<uint8_t> resp;
    if (std::memcmp(want, rec.md5, 16) != 0) {
      resp = control_response(opcode, {}, 0x2, 0x2);
    } else if (auto it = n_.responses.find(opcode); it != n_.responses.end()) {
      resp = it->second;
    } else {
      resp = control_response(opcode, {}, 0x3, 0x4);  // unsupported opcode
    }
    // The firmware echoes the request's sequence number.
    if (resp.size() >= 12 && len >= 12) std::memcpy(resp.data() + 8, rec.request.data() + 8, 4);
    if (n_.eintr_after_accept > 0) {
      --n_.eintr_after_accept;
      n_.pending_answer = resp;
      return EINTR;
    }
    if (n_.late_answer && !n_.pending_answer.empty()) {
      resp = std::move(n_.pending_answer);
      n_.pending_answer.clear();
    }
    std::memcpy(b + 20, resp.data(), resp.size());
    const uint32_t out_len = n_.force_len ? n_.force_len : static_cast<uint32_t>(resp.size());
    std::memcpy(b + 16, &out_len, 4);
    md5(resp.data(), resp.size(), b);
    if (n_.corrupt_md5) b[0] ^= 0xFF;
    return 0;
  }

  Node& n_;
};

inline Result<std::unique_ptr<engine::hailo8::driver::DriverFile>> HailoDriverDouble::open(
    const std::string& path) {
  using engine::hailo8::driver::DriverFile;
  auto it = nodes_.find(path);
  if (it == nodes_.end() || it->second.open_errno == ENOENT) {
    return make_error(Errc::not_found, "cannot open {}: No such file or directory", path);
  }
  if (it->second.open_errno) {
    return make_error(Errc::io_error, "cannot open {}: {}", path, std::strerror(it->second.open_errno));
  }
  return std::unique_ptr<DriverFile>(std::make_unique<File>(it->second));
}

}  // namespace aisrv::test
