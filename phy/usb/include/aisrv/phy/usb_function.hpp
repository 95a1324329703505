// aisrv phy/usb — the USB transport of aisrvd: serves the interpreter on a Linux USB gadget through FunctionFS.
// start() writes the descriptors and strings to ep0 of a mounted FunctionFS instance (after which the gadget can be
// bound to a UDC: tools/usb-gadget bind), runs a control thread for the ep0 events (bind, enable, disable, setup,
// suspend, resume, unbind) and a session thread that carries the framing on the bulk endpoints (UsbConnection).
// Closing ep0 (stop(), or the process ending) makes the kernel unbind the gadget from its UDC.
#pragma once

#include <memory>
#include <string>

#include "aisrv/protocol/result.hpp"

namespace spdlog {
class logger;
}
namespace aisrv::server {
class Port;
}

namespace aisrv::phy {

struct UsbFunctionOptions {
  std::string ffs_dir;                     // FunctionFS mount point (holds ep0)
  std::string interface_name = "aisrv";    // the interface string
  std::shared_ptr<spdlog::logger> logger;  // link events (may be null)
  // Signal sent to the serving thread to interrupt its blocking endpoint I/O when the host resets the link or the
  // function stops; a handler that does nothing is installed for it. 0: SIGRTMIN + 4.
  int interrupt_signal = 0;
};

class UsbFunctionServer {
 public:
  // Errc::not_found / io_error naming the file and the reason when the mount is missing, already in use, or
  // refuses the descriptors.
  static Result<std::unique_ptr<UsbFunctionServer>> start(server::Port& server, UsbFunctionOptions options);
  ~UsbFunctionServer();
  UsbFunctionServer(const UsbFunctionServer&) = delete;
  UsbFunctionServer& operator=(const UsbFunctionServer&) = delete;

  // Ends both threads (a command in progress finishes first) and closes the endpoint files. Idempotent.
  void stop();
  // Commands served since start.
  uint64_t commands_served() const;

 private:
  class Impl;
  explicit UsbFunctionServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace aisrv::phy
