// aisrv phy/usb — FunctionFS function: descriptors to ep0, the ep0 event thread, and the connection thread (UsbConnection).
#include "aisrv/phy/usb_function.hpp"

#include <endian.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/functionfs.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "aisrv/phy/ffs_descriptors.hpp"
#include "aisrv/phy/usb_connection.hpp"
#include "ffs_endpoints.hpp"

namespace aisrv::phy {

using usb::FunctionFsEndpoints;
using usb::UsbConnection;

namespace {

const char* event_name(unsigned type) {
  switch (type) {
    case FUNCTIONFS_BIND: return "BIND";
    case FUNCTIONFS_UNBIND: return "UNBIND";
    case FUNCTIONFS_ENABLE: return "ENABLE";
    case FUNCTIONFS_DISABLE: return "DISABLE";
    case FUNCTIONFS_SETUP: return "SETUP";
    case FUNCTIONFS_SUSPEND: return "SUSPEND";
    case FUNCTIONFS_RESUME: return "RESUME";
    default: return "UNKNOWN";
  }
}

Status write_all(int fd, const std::vector<uint8_t>& blob, const std::string& path, const char* what) {
  const ssize_t n = ::write(fd, blob.data(), blob.size());
  if (n != static_cast<ssize_t>(blob.size()))
    return make_error(Errc::io_error, "writing the {} to {} failed: {} (is it a fresh FunctionFS mount?)", what, path,
                      n < 0 ? std::strerror(errno) : "short write");
  return ok();
}

}  // namespace

class UsbFunctionServer::Impl {
 public:
  Impl(UsbFunctionOptions options, int ep0, int wake) : options_(std::move(options)), ep0_(ep0), wake_(wake) {}
  ~Impl() {
    stop();
    connection_.reset();
    endpoints_.reset();
    ::close(wake_);
    if (ep0_ >= 0) ::close(ep0_);
  }

  Status start(server::Port& server) {
    const int signal = options_.interrupt_signal ? options_.interrupt_signal : SIGRTMIN + 4;
    endpoints_ = AISRV_TRY(FunctionFsEndpoints::open(options_.ffs_dir, signal));
    connection_ = AISRV_TRY(UsbConnection::create(server, *endpoints_, options_.logger));
    control_ = std::thread([this] { control_loop(); });
    serving_ = std::thread([this] { connection_->run(); });
    return ok();
  }

  void stop() {
    if (stopped_.exchange(true)) return;
    if (endpoints_) endpoints_->close();
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
    if (serving_.joinable()) serving_.join();
    if (control_.joinable()) control_.join();
  }

  uint64_t commands_served() const { return connection_ ? connection_->commands_served() : 0; }

 private:
  void log(spdlog::level::level_enum level, const std::string& text) {
    if (options_.logger) options_.logger->log(level, "USB: {}", text);
  }

  void control_loop() {
    usb_functionfs_event events[4];
    while (!stopped_.load()) {
      pollfd fds[2] = {{ep0_, POLLIN, 0}, {wake_, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        log(spdlog::level::err, fmt::format("poll on ep0 failed: {}", std::strerror(errno)));
        return;
      }
      if (fds[1].revents) return;
      if (!(fds[0].revents & POLLIN)) continue;
      const ssize_t n = ::read(ep0_, events, sizeof events);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        log(spdlog::level::err, fmt::format("reading ep0 events failed: {}", std::strerror(errno)));
        return;
      }
      for (size_t i = 0; i < static_cast<size_t>(n) / sizeof events[0]; ++i) handle(events[i]);
    }
  }

  void handle(const usb_functionfs_event& ev) {
    switch (ev.type) {
      case FUNCTIONFS_ENABLE:
        endpoints_->on_enable();
        log(spdlog::level::debug, fmt::format("ENABLE (max packet size {})", endpoints_->max_packet()));
        break;
      case FUNCTIONFS_DISABLE:
      case FUNCTIONFS_UNBIND:
        endpoints_->on_disable();
        log(spdlog::level::debug, event_name(ev.type));
        break;
      case FUNCTIONFS_SETUP: setup(ev.u.setup); break;
      default: log(spdlog::level::debug, event_name(ev.type)); break;  // BIND, SUSPEND, RESUME
    }
  }

  // Control requests addressed to our interface: the vendor requests of the framing; anything else is stalled.
  void setup(const usb_ctrlrequest& req) {
    const bool in = (req.bRequestType & USB_DIR_IN) != 0;
    const bool vendor_interface = (req.bRequestType & USB_TYPE_MASK) == USB_TYPE_VENDOR &&
                                  (req.bRequestType & USB_RECIP_MASK) == USB_RECIP_INTERFACE;
    const uint16_t length = le16toh(req.wLength);
    if (vendor_interface && in) {
      if (auto answer = connection_->control_in(req.bRequest, le16toh(req.wValue), length)) {
        if (::write(ep0_, answer->data(), std::min<size_t>(answer->size(), length)) < 0)
          log(spdlog::level::warn, fmt::format("answering control request {:#04x} failed: {}", req.bRequest,
                                               std::strerror(errno)));
        return;
      }
    } else if (vendor_interface && !in) {
      if (connection_->control_out(req.bRequest, le16toh(req.wValue), length)) {
        // The status stage: completes the host's control transfer once the request was carried out.
        if (::read(ep0_, nullptr, 0) < 0)
          log(spdlog::level::warn, fmt::format("acknowledging control request {:#04x} failed: {}", req.bRequest,
                                               std::strerror(errno)));
        return;
      }
    }
    log(spdlog::level::debug, fmt::format("stalling control request type {:#04x} request {:#04x}", req.bRequestType,
                                          req.bRequest));
    // FunctionFS stalls ep0 when the pending request is answered in the wrong direction.
    if (in) (void)!::read(ep0_, nullptr, 0);
    else (void)!::write(ep0_, nullptr, 0);
  }

  UsbFunctionOptions options_;
  int ep0_;
  int wake_;
  std::unique_ptr<FunctionFsEndpoints> endpoints_;
  std::unique_ptr<UsbConnection> connection_;
  std::thread control_;
  std::thread serving_;
  std::atomic<bool> stopped_{false};
};

Result<std::unique_ptr<UsbFunctionServer>> UsbFunctionServer::start(server::Port& server,
                                                                    UsbFunctionOptions options) {
  const std::string path = options.ffs_dir + "/ep0";
  const int ep0 = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (ep0 < 0)
    return make_error(errno == ENOENT ? Errc::not_found : Errc::io_error,
                      "cannot open {}: {} (mount FunctionFS there first: tools/usb-gadget up)", path,
                      std::strerror(errno));
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  auto impl = std::make_unique<Impl>(options, ep0, wake);
  AISRV_TRY(write_all(ep0, usb::ffs_descriptors(), path, "descriptors"));
  AISRV_TRY(write_all(ep0, usb::ffs_strings(options.interface_name), path, "strings"));
  AISRV_TRY(impl->start(server));
  return std::unique_ptr<UsbFunctionServer>(new UsbFunctionServer(std::move(impl)));
}

UsbFunctionServer::UsbFunctionServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UsbFunctionServer::~UsbFunctionServer() = default;
void UsbFunctionServer::stop() { impl_->stop(); }
uint64_t UsbFunctionServer::commands_served() const { return impl_->commands_served(); }

}  // namespace aisrv::phy
