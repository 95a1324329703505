// aisrv hailo8/driver — an open Hailo-8: version and board checks, then MD5-framed firmware controls.
#include "aisrv/engine/hailo8/driver/device.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "aisrv/engine/hailo8/common/digest.hpp"

namespace aisrv::engine::hailo8::driver {
namespace {

static_assert(common::kMd5Length == kMd5Length, "FW_CONTROL carries an MD5 digest");

std::string ioctl_error_text(int err) {
  if (err == ENOTTY) return "the driver does not know this ioctl (ENOTTY: driver/ABI mismatch)";
  return std::strerror(err);
}

}  // namespace

bool firmware_controls_supported(const FirmwareVersion& fw) {
  for (const auto& v : supported_driver_versions()) {
    if (v.major == fw.major && v.minor == fw.minor) return true;
  }
  return false;
}

Result<HailoDevice> HailoDevice::open(const std::string& path, DriverOpener& opener) {
  HailoDevice dev;
  dev.path_ = path;
  dev.file_ = AISRV_TRY(opener.open(path));

  DriverInfo info{};
  // The two queries only read the driver's state: safe to restart after a signal.
  if (int err = dev.file_->ioctl(kIoctlsCurrent.query_driver_info, &info, Restart::on_eintr)) {
    // ENOTTY: the node does not speak any ioctl ABI we implement (hailo_pci before 4.18 numbers them differently).
    return make_error(err == ENOTTY ? Errc::incompatible : Errc::io_error, "{}: QUERY_DRIVER_INFO failed: {}", path,
                      ioctl_error_text(err));
  }
  dev.version_ = DriverVersion{info.major_version, info.minor_version, info.revision_version};
  auto abi = select_abi(dev.version_);
  if (!abi) return make_error(Errc::incompatible, "{}: {}", path, abi.error().message);
  dev.abi_ = *abi;
  dev.ioctls_ = ioctl_numbers(dev.version_, dev.abi_);

  DeviceProperties props{};
  if (int err = dev.file_->ioctl(dev.ioctls_.query_device_properties, &props, Restart::on_eintr)) {
    return make_error(Errc::io_error, "{}: QUERY_DEVICE_PROPERTIES failed: {}", path, ioctl_error_text(err));
  }
  dev.props_ = DevicePropertiesInfo{props.desc_max_page_size, props.board_type, props.allocation_mode,
                                    props.dma_type,           props.dma_engines_count, props.is_fw_loaded != 0};
  if (dev.props_.board_type != static_cast<uint32_t>(BoardType::hailo8)) {
    return make_error(Errc::not_supported, "{}: board type {} is not a Hailo-8 (board type 0)", path,
                      dev.props_.board_type);
  }
  if (dev.props_.dma_type != static_cast<uint32_t>(DmaType::pcie)) {
    return make_error(Errc::not_supported, "{}: DMA type {} is not PCIe (0)", path, dev.props_.dma_type);
  }
  return dev;
}

Result<ControlResponse> HailoDevice::exchange(uint32_t opcode, std::span<const std::vector<uint8_t>> params,
                                              uint32_t timeout_ms) {
  const auto traits = opcode_traits(opcode);
  if (!traits) return make_error(Errc::invalid_argument, "firmware control opcode {} is unknown", opcode);
  if (!props_.fw_loaded) {
    return make_error(Errc::io_error, "{}: the driver reports no firmware loaded (hailo8_fw.bin missing?)", path_);
  }
  // Every control gets a sequence number of its own (never reused, never 0), checked in the answer: after an
  // interrupted control the firmware's late answer to it can never be taken for the answer to a later one.
  if (++last_sequence_ == 0) last_sequence_ = 1;
  const uint32_t sequence = last_sequence_;
  const auto request = AISRV_TRY(build_control_request(opcode, params, sequence));

  // The struct is 1.5 KB: keep it off the stack of deep callers.
  auto ctl = std::make_unique<FwControl>();
  std::memset(ctl.get(), 0, sizeof(FwControl));
  const common::Md5Digest sum = AISRV_TRY(common::md5(request));
  std::memcpy(ctl->expected_md5, sum.data(), sum.size());
  ctl->buffer_len = static_cast<uint32_t>(request.size());
  std::memcpy(ctl->buffer, request.data(), request.size());
  ctl->timeout_ms = timeout_ms;
  ctl->cpu_id = static_cast<uint32_t>(traits->cpu);

  if (int err = file_->ioctl(ioctls_.fw_control, ctl.get(), Restart::never)) {
    if (err == EINTR)
      return make_error(Errc::interrupted,
                        "{}: FW_CONTROL {} (sequence {}) was interrupted by a signal while the driver waited for the "
                        "firmware's answer; the firmware may have carried it out, so it is not sent again",
                        path_, traits->name, sequence);
    return make_error(err == ETIMEDOUT ? Errc::timeout : Errc::io_error, "{}: FW_CONTROL {} failed: {}", path_,
                      traits->name, ioctl_error_text(err));
  }
  const uint32_t len = ctl->buffer_len;
  if (len > kMaxControlLength) {
    return make_error(Errc::protocol_error, "{}: FW_CONTROL {} response length {} exceeds the {} byte buffer", path_,
                      traits->name, len, kMaxControlLength);
  }
  const std::span<const uint8_t> response(ctl->buffer, len);
  const common::Md5Digest got = AISRV_TRY(common::md5(response));
  if (std::memcmp(got.data(), ctl->expected_md5, got.size()) != 0) {
    return make_error(Errc::protocol_error, "{}: FW_CONTROL {} response failed its MD5 check (driver sent {}, computed {})",
                      path_, traits->name, common::hex(std::span<const uint8_t>(ctl->expected_md5, kMd5Length)),
                      common::hex(got));
  }
  auto parsed = parse_control_response(response, opcode);
  if (!parsed) return make_error(parsed.error().code, "{}: {}", path_, parsed.error().message);
  if (parsed->sequence != sequence)
    return make_error(Errc::protocol_error,
                      "{}: FW_CONTROL {} was sent as sequence {} and answered as sequence {} (a late answer to an "
                      "earlier, interrupted control?): refused",
                      path_, traits->name, sequence, parsed->sequence);
  if (auto s = check_control_status(*parsed); !s) return make_error(s.error().code, "{}: {}", path_, s.error().message);
  return parsed;
}

Result<ControlResponse> HailoDevice::control(uint32_t opcode, std::span<const std::vector<uint8_t>> params,
                                             uint32_t timeout_ms) {
  const auto traits = opcode_traits(opcode);
  if (!traits) return make_error(Errc::invalid_argument, "firmware control opcode {} is unknown", opcode);
  if (!traits->critical) {
    if (!firmware_) {
      auto id = identify();
      if (!id) return id.error();
    }
    if (!firmware_controls_supported(*firmware_)) {
      return make_error(Errc::incompatible,
                        "{}: firmware {}.{}.{} is not a version whose controls we know (supported: {}); only "
                        "critical controls such as IDENTIFY are sent",
                        path_, firmware_->major, firmware_->minor, firmware_->revision,
                        supported_driver_versions_text());
    }
  }
  return exchange(opcode, params, timeout_ms);
}

Result<DeviceIdentity> HailoDevice::identify() {
  auto response = AISRV_TRY(exchange(static_cast<uint32_t>(ControlOpcode::identify), {}, kControlTimeoutMs));
  auto id = parse_identify(response);
  if (!id) return make_error(id.error().code, "{}: {}", path_, id.error().message);
  firmware_ = id->firmware;
  return id;
}

Result<DeviceInformation> HailoDevice::device_information() {
  auto response = AISRV_TRY(control(static_cast<uint32_t>(ControlOpcode::get_device_information)));
  auto info = parse_device_information(response);
  if (!info) return make_error(info.error().code, "{}: {}", path_, info.error().message);
  return info;
}

}  // namespace aisrv::engine::hailo8::driver
