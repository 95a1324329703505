// aisrv VM test helper — the UVC webcam over usbredir (usbredir_uvc_camera.hpp says what and why).
#include "usbredir_uvc_camera.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <usbredirparser.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace aisrv::test {

namespace {

std::string trimmed_file(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// The index usbredir's ep_info arrays use for an endpoint address: OUT 0..15, IN 16..31.
int ep_index(uint8_t ep) { return ((ep & 0x80) >> 3) | (ep & 0x0F); }

}  // namespace

std::unique_ptr<UsbredirUvcCamera> UsbredirUvcCamera::open(const std::string& port, int fps, std::string& error) {
  std::string device;
  if (DIR* d = ::opendir("/sys/class/virtio-ports")) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n[0] != '.' && trimmed_file("/sys/class/virtio-ports/" + n + "/name") == port) device = "/dev/" + n;
    }
    ::closedir(d);
  }
  if (device.empty()) {
    error = "no virtio-serial port named '" + port + "' (/sys/class/virtio-ports/*/name; vm-run --usb-redir-port)";
    return nullptr;
  }
  std::unique_ptr<UsbredirUvcCamera> cam(new UsbredirUvcCamera(fps));
  cam->fd_ = ::open(device.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (cam->fd_ < 0) {
    error = device + ": " + std::strerror(errno);
    return nullptr;
  }
  cam->stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  usbredirparser* p = usbredirparser_create();
  if (!p) {
    error = "usbredirparser_create failed";
    return nullptr;
  }
  cam->parser_ = p;
  p->priv = cam.get();
  p->log_func = log_cb;
  p->read_func = read_cb;
  p->write_func = write_cb;
  p->hello_func = hello_cb;
  p->reset_func = reset_cb;
  p->set_configuration_func = set_configuration_cb;
  p->get_configuration_func = get_configuration_cb;
  p->set_alt_setting_func = set_alt_setting_cb;
  p->get_alt_setting_func = get_alt_setting_cb;
  p->cancel_data_packet_func = cancel_data_packet_cb;
  p->control_packet_func = control_packet_cb;
  p->bulk_packet_func = bulk_packet_cb;
  uint32_t caps[USB_REDIR_CAPS_SIZE] = {};
  usbredirparser_caps_set_cap(caps, usb_redir_cap_connect_device_version);
  usbredirparser_caps_set_cap(caps, usb_redir_cap_ep_info_max_packet_size);
  usbredirparser_caps_set_cap(caps, usb_redir_cap_64bits_ids);
  usbredirparser_caps_set_cap(caps, usb_redir_cap_32bits_bulk_length);
  usbredirparser_init(p, "aisrv vm_uvc camera", caps, USB_REDIR_CAPS_SIZE, usbredirparser_fl_usb_host);
  cam->thread_ = std::thread([c = cam.get()] { c->run(); });
  return cam;
}

UsbredirUvcCamera::~UsbredirUvcCamera() {
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (parser_) usbredirparser_destroy(parser_);
  if (fd_ >= 0) ::close(fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void UsbredirUvcCamera::run() {
  for (;;) {
    const int timeout = pending_.empty() ? -1 : wait_ms();
    const short out = usbredirparser_has_data_to_write(parser_) ? POLLOUT : 0;
    pollfd p[2] = {{fd_, short(POLLIN | out), 0}, {stop_fd_, POLLIN, 0}};
    const int r = ::poll(p, 2, timeout);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (p[1].revents & POLLIN)) break;
    if (p[0].revents & POLLIN) {
      if (usbredirparser_do_read(parser_) == usbredirparser_read_io_error) {
        note("usbredir: read error on the port");
        break;
      }
    } else if (p[0].revents & POLLHUP) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // QEMU's side not connected (yet)
    }
    serve_bulk();
    if (usbredirparser_has_data_to_write(parser_)) (void)usbredirparser_do_write(parser_);
  }
  if (connected_.load()) {  // unplug, then give QEMU the packet (the port is non-blocking)
    usbredirparser_send_device_disconnect(parser_);
    for (int i = 0; i < 50 && usbredirparser_has_data_to_write(parser_); ++i) {
      (void)usbredirparser_do_write(parser_);
      std::this_thread::sleep_for(std::chrono::milliseconds(4));
    }
  }
}

int UsbredirUvcCamera::read_cb(void* priv, uint8_t* data, int count) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  const ssize_t r = ::read(self->fd_, data, size_t(count));
  if (r < 0) return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
  return int(r);
}

int UsbredirUvcCamera::write_cb(void* priv, uint8_t* data, int count) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  const ssize_t r = ::write(self->fd_, data, size_t(count));
  if (r < 0) return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
  return int(r);
}

void UsbredirUvcCamera::log_cb(void* priv, int level, const char* msg) {
  if (level <= usbredirparser_warning) static_cast<UsbredirUvcCamera*>(priv)->note(std::string("usbredir: ") + msg);
}

// QEMU's hello: announce the camera. QEMU wants the interfaces and endpoints before the connect.
void UsbredirUvcCamera::hello_cb(void* priv, struct usb_redir_hello_header*) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  usb_redir_interface_info_header ifs{};
  ifs.interface_count = 2;
  ifs.interface[0] = 0, ifs.interface_class[0] = 0x0E, ifs.interface_subclass[0] = 0x01;  // VideoControl
  ifs.interface[1] = 1, ifs.interface_class[1] = 0x0E, ifs.interface_subclass[1] = 0x02;  // VideoStreaming
  usbredirparser_send_interface_info(self->parser_, &ifs);
  usb_redir_ep_info_header eps{};
  std::fill(std::begin(eps.type), std::end(eps.type), uint8_t(usb_redir_type_invalid));
  for (uint8_t ep : {uint8_t(0x00), uint8_t(0x80)}) {
    eps.type[ep_index(ep)] = usb_redir_type_control;
    eps.max_packet_size[ep_index(ep)] = 64;
  }
  const int s = ep_index(kStreamEndpoint);
  eps.type[s] = usb_redir_type_bulk;
  eps.interface[s] = 1;
  eps.max_packet_size[s] = 512;
  usbredirparser_send_ep_info(self->parser_, &eps);
  usb_redir_device_connect_header dev{};
  dev.speed = usb_redir_speed_high;
  dev.device_class = 0xEF, dev.device_subclass = 0x02, dev.device_protocol = 0x01;  // IAD
  dev.vendor_id = 0x1d6b, dev.product_id = 0x0102, dev.device_version_bcd = 0x0100;
  usbredirparser_send_device_connect(self->parser_, &dev);
  self->connected_.store(true);
}

void UsbredirUvcCamera::reset_cb(void* priv) { static_cast<UsbredirUvcCamera*>(priv)->restart_stream(); }

void UsbredirUvcCamera::set_configuration_cb(void* priv, uint64_t id, struct usb_redir_set_configuration_header* h) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  usb_redir_configuration_status_header st{};
  st.status = h->configuration <= 1 ? usb_redir_success : usb_redir_stall;
  if (st.status == usb_redir_success) self->configuration_ = h->configuration;
  st.configuration = self->configuration_;
  self->restart_stream();
  usbredirparser_send_configuration_status(self->parser_, id, &st);
}

void UsbredirUvcCamera::get_configuration_cb(void* priv, uint64_t id) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  usb_redir_configuration_status_header st{};
  st.status = usb_redir_success;
  st.configuration = self->configuration_;
  usbredirparser_send_configuration_status(self->parser_, id, &st);
}

// Each interface has alternate setting 0 only (the stream is on a bulk endpoint); selecting it restarts the stream.
void UsbredirUvcCamera::set_alt_setting_cb(void* priv, uint64_t id, struct usb_redir_set_alt_setting_header* h) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  usb_redir_alt_setting_status_header st{};
  st.interface = h->interface;
  st.alt = 0;
  st.status = (h->interface <= 1 && h->alt == 0) ? usb_redir_success : usb_redir_inval;
  if (st.status != usb_redir_success)
    self->note("usbredir: refused alternate setting " + std::to_string(h->alt) + " of interface " +
               std::to_string(h->interface));
  self->restart_stream();
  usbredirparser_send_alt_setting_status(self->parser_, id, &st);
}

void UsbredirUvcCamera::get_alt_setting_cb(void* priv, uint64_t id, struct usb_redir_get_alt_setting_header* h) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  usb_redir_alt_setting_status_header st{};
  st.interface = h->interface;
  st.status = h->interface <= 1 ? usb_redir_success : usb_redir_inval;
  usbredirparser_send_alt_setting_status(self->parser_, id, &st);
}

void UsbredirUvcCamera::cancel_data_packet_cb(void* priv, uint64_t id) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  auto it = std::find_if(self->pending_.begin(), self->pending_.end(), [&](const Pending& q) { return q.id == id; });
  if (it == self->pending_.end()) return;  // already answered
  self->pending_.erase(it);
  self->send_bulk(id, usb_redir_cancelled, {});
}

void UsbredirUvcCamera::control_packet_cb(void* priv, uint64_t id, struct usb_redir_control_packet_header* h,
                                          uint8_t* data, int len) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  const uint8_t setup[8] = {h->requesttype, h->request, uint8_t(h->value), uint8_t(h->value >> 8),
                            uint8_t(h->index), uint8_t(h->index >> 8), uint8_t(h->length), uint8_t(h->length >> 8)};
  const bool in = h->requesttype & 0x80;
  std::vector<uint8_t> out;
  if (!in && data && len > 0) out.assign(data, data + len);
  if (data) usbredirparser_free_packet_data(self->parser_, data);
  const auto answer = self->control(setup, out);
  usb_redir_control_packet_header r = *h;
  if (!answer) {
    r.status = usb_redir_stall;
    r.length = 0;
    usbredirparser_send_control_packet(self->parser_, id, &r, nullptr, 0);
  } else if (in) {
    r.status = usb_redir_success;
    r.length = uint16_t(answer->size());
    usbredirparser_send_control_packet(self->parser_, id, &r, const_cast<uint8_t*>(answer->data()),
                                       int(answer->size()));
  } else {
    r.status = usb_redir_success;
    r.length = uint16_t(out.size());
    usbredirparser_send_control_packet(self->parser_, id, &r, nullptr, 0);
  }
}

void UsbredirUvcCamera::bulk_packet_cb(void* priv, uint64_t id, struct usb_redir_bulk_packet_header* h, uint8_t* data,
                                       int) {
  auto* self = static_cast<UsbredirUvcCamera*>(priv);
  if (data) usbredirparser_free_packet_data(self->parser_, data);
  const uint32_t length = uint32_t(h->length) | uint32_t(h->length_high) << 16;
  if (h->endpoint != kStreamEndpoint) {
    self->note("usbredir: bulk transfer on endpoint " + std::to_string(h->endpoint) + " stalled");
    usb_redir_bulk_packet_header r = *h;
    r.status = usb_redir_stall;
    r.length = 0, r.length_high = 0;
    usbredirparser_send_bulk_packet(self->parser_, id, &r, nullptr, 0);
    return;
  }
  self->pending_.push_back({id, length});
}

void UsbredirUvcCamera::send_bulk(uint64_t id, uint8_t status, const std::vector<uint8_t>& data) {
  usb_redir_bulk_packet_header r{};
  r.endpoint = kStreamEndpoint;
  r.status = status;
  r.length = uint16_t(data.size());
  r.length_high = uint16_t(data.size() >> 16);
  usbredirparser_send_bulk_packet(parser_, id, &r, const_cast<uint8_t*>(data.data()), int(data.size()));
}

void UsbredirUvcCamera::serve_bulk() {
  while (!pending_.empty()) {
    const auto payload = next_payload(pending_.front().length);
    if (!payload) return;  // no frame due yet
    const Pending t = pending_.front();
    pending_.erase(pending_.begin());
    send_bulk(t.id, payload->empty() ? uint8_t(usb_redir_stall) : uint8_t(usb_redir_success), *payload);
  }
}

}  // namespace aisrv::test
