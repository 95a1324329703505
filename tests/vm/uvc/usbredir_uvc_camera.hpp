// aisrv VM test helper (test code only) — the UVC webcam (uvc_camera_model.hpp) played over QEMU's usbredir protocol:
// vm-run --usb-redir-port NAME gives the guest a PCI xHCI controller (qemu-xhci) with a usb-redir device on it whose
// usbredir connection is the guest's own virtio-serial port NAME. This object opens that port and is the usbredir
// "USB host" side, the one that has the device (libusbredirparser, Debian's libusbredirparser-dev, in its usb_host
// role): it announces the camera (interface_info, ep_info, device_connect, high speed), QEMU plugs it into the xHCI
// root hub, and the guest's xhci_hcd and uvcvideo drive it. Control transfers go to the device model; the bulk IN
// transfers of the stream wait here until the model has a payload for them. Why: a camera on a PCI host controller
// has an ACPI firmware node above it, which libcamera's uvcvideo pipeline handler needs to name a camera (vhci-hcd's
// platform device has none); see vm_uvc_test.cpp. Written from usbredirparser.h / usbredirproto.h.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "uvc_camera_model.hpp"

struct usbredirparser;  // usbredirparser.h (only the .cpp includes it)
struct usb_redir_hello_header;
struct usb_redir_set_configuration_header;
struct usb_redir_set_alt_setting_header;
struct usb_redir_get_alt_setting_header;
struct usb_redir_control_packet_header;
struct usb_redir_bulk_packet_header;

namespace aisrv::test {

class UsbredirUvcCamera : public UvcCamera {
 public:
  // Opens the virtio-serial port named `port` (/dev/vportNpM whose /sys/class/virtio-ports/vportNpM/name is it) and
  // starts serving. Empty with `error` set when there is no such port.
  static std::unique_ptr<UsbredirUvcCamera> open(const std::string& port, int fps, std::string& error);
  ~UsbredirUvcCamera() override;  // announces the unplug (device_disconnect) and stops the thread

  bool connected() const { return connected_.load(); }  // QEMU's hello came and the device was announced

 private:
  explicit UsbredirUvcCamera(int fps) : UvcCamera(fps) {}
  void run();
  void serve_bulk();
  void send_bulk(uint64_t id, uint8_t status, const std::vector<uint8_t>& data);

  // libusbredirparser callbacks (priv is the camera); all run on the thread.
  static int read_cb(void* priv, uint8_t* data, int count);
  static int write_cb(void* priv, uint8_t* data, int count);
  static void log_cb(void* priv, int level, const char* msg);
  static void hello_cb(void* priv, ::usb_redir_hello_header* hello);
  static void reset_cb(void* priv);
  static void set_configuration_cb(void* priv, uint64_t id, ::usb_redir_set_configuration_header* h);
  static void get_configuration_cb(void* priv, uint64_t id);
  static void set_alt_setting_cb(void* priv, uint64_t id, ::usb_redir_set_alt_setting_header* h);
  static void get_alt_setting_cb(void* priv, uint64_t id, ::usb_redir_get_alt_setting_header* h);
  static void cancel_data_packet_cb(void* priv, uint64_t id);
  static void control_packet_cb(void* priv, uint64_t id, ::usb_redir_control_packet_header* h, uint8_t* data,
                                int len);
  static void bulk_packet_cb(void* priv, uint64_t id, ::usb_redir_bulk_packet_header* h, uint8_t* data, int len);

  usbredirparser* parser_ = nullptr;
  int fd_ = -1;        // the virtio-serial port
  int stop_fd_ = -1;   // eventfd: ends the thread
  std::thread thread_;
  std::atomic<bool> connected_{false};
  uint8_t configuration_ = 0;
  struct Pending {
    uint64_t id;
    uint32_t length;
  };
  std::vector<Pending> pending_;  // bulk IN transfers waiting for data, oldest first
};

}  // namespace aisrv::test
