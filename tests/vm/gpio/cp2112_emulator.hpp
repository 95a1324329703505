// Test double for the VM GPIO test (tests/ only): a Silicon Labs CP2112 (USB HID to SMBus bridge with 8 GPIO pins)
// emulated with FunctionFS on the guest's gadget stack, so that the kernel's own hid-cp2112 driver binds to it over
// dummy_hcd and registers a real gpiochip ("cp2112_gpio"). The emulator answers the control requests the driver and
// usbhid send — the HID report descriptor, SET_IDLE, and the feature reports the driver uses for the version, the
// SMBus configuration, the lock byte, the GPIO configuration (direction, push-pull) and the GPIO latch (get / set
// with a mask) — and keeps the pins' state for the test to read: the levels aisrvd drives through the GPIO character
// device arrive here through gpiolib, hid-cp2112, usbhid, dummy_hcd and f_fs.
//
// Facts used (read, not copied): report numbers and lengths from Linux drivers/hid/hid-cp2112.c (CP2112_GPIO_CONFIG
// 0x02 / 5 bytes, CP2112_GPIO_GET 0x03 / 2, CP2112_GPIO_SET 0x04 / 3 with value and mask, CP2112_GET_VERSION_INFO
// 0x05 / 3, CP2112_SMBUS_CONFIG 0x06 / 14, CP2112_LOCK_BYTE 0x20 / 2; cp2112_probe, cp2112_gpio_set,
// cp2112_gpio_direction_output); request encoding from drivers/hid/usbhid/hid-core.c (usbhid_get_raw_report /
// usbhid_set_raw_report: wValue = (type + 1) << 8 | report id, data led by the report id); f_fs's forwarding of
// interface requests and its HID descriptor check from drivers/usb/gadget/function/f_fs.c.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace aisrv::test {

class Cp2112Emulator {
 public:
  // `ffs_mount`: a mounted FunctionFS instance of a gadget with the CP2112's ids (10c4:ea90), not yet bound.
  explicit Cp2112Emulator(std::string ffs_mount);
  ~Cp2112Emulator();
  // Writes the descriptors and starts answering ep0. False (with `error()`) on failure.
  bool start();
  const std::string& error() const { return error_; }

  uint8_t latch() const { return latch_.load(); }      // pin levels as last set (bit n = pin n)
  uint8_t direction() const { return direction_.load(); }  // bit n set: pin n is an output
  int gpio_sets() const { return sets_.load(); }      // GPIO_SET reports received
  int requests() const { return requests_.load(); }   // control requests answered

 private:
  void serve();
  void handle_setup(const uint8_t* setup);

  std::string mount_;
  std::string error_;
  int ep0_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint8_t> latch_{0}, direction_{0}, push_pull_{0};
  std::atomic<int> sets_{0}, requests_{0};
};

}  // namespace aisrv::test
