// aisrv benchmarks — USB payload throughput inside the QEMU guest (tools/bench usb): SET_INPUT_TENSOR and
// GET_OUTPUT_TENSOR of one size through aisrvd's USB transport and the client library, against raw libusb bulk
// transfers of the same size to ffs_raw_device (same dummy_hcd, same VM run). Each round measures the raw series
// right before the aisrv series it is compared with, so load on the machine hits both alike; the medians of the
// figures and of the per-round ratios are reported:
//   bench NAME: VALUE MB/s vs BASELINE VALUE MB/s = RATIO x
//   bench_usb --raw usb:VID:PID --aisrv usb:VID:PID [--size BYTES] [--count N] [--rounds R]
#include <fmt/format.h>
#include <libusb-1.0/libusb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "aisrv/client/client.hpp"
#include "aisrv/client/usb_transport.hpp"
#include "aisrv/protocol/usb_link.hpp"
#include "bench_report.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_usb: %s\n", what.c_str());
  std::exit(1);
}

double mb_per_s(size_t bytes, Clock::duration d) {
  return static_cast<double>(bytes) / std::chrono::duration<double>(d).count() / 1e6;
}

struct RawDevice {
  libusb_context* ctx = nullptr;
  libusb_device_handle* h = nullptr;
  uint8_t itf = 0, ep_in = 0, ep_out = 0;
  size_t mps = 0;

  explicit RawDevice(const client::UsbTarget& t) {
    if (libusb_init(&ctx) != 0) die("libusb_init failed");
    h = libusb_open_device_with_vid_pid(ctx, *t.vendor_id, *t.product_id);
    if (!h) die("raw device " + t.to_string() + " not found");
    libusb_config_descriptor* cfg = nullptr;
    if (libusb_get_active_config_descriptor(libusb_get_device(h), &cfg) != 0) die("no configuration");
    const auto& d = cfg->interface[0].altsetting[0];
    itf = d.bInterfaceNumber;
    for (int e = 0; e < d.bNumEndpoints; ++e) {
      const auto& ep = d.endpoint[e];
      if (ep.bEndpointAddress & 0x80) ep_in = ep.bEndpointAddress;
      else ep_out = ep.bEndpointAddress, mps = ep.wMaxPacketSize;
    }
    libusb_free_config_descriptor(cfg);
    if (libusb_claim_interface(h, itf) != 0) die("cannot claim the raw interface");
  }
  ~RawDevice() {
    libusb_release_interface(h, itf);
    libusb_close(h);
    libusb_exit(ctx);
  }
  // `count` OUT transfers of `size` bytes, each ended by a zero-length packet when needed.
  double out(size_t size, int count) {
    std::vector<uint8_t> buf(size, 0xA5);
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
      int done = 0;
      if (libusb_bulk_transfer(h, ep_out, buf.data(), static_cast<int>(size), &done, 10000) != 0 ||
          static_cast<size_t>(done) != size)
        die("raw bulk OUT failed");
      if (size % mps == 0 && libusb_bulk_transfer(h, ep_out, buf.data(), 0, &done, 10000) != 0)
        die("raw zero-length packet failed");
    }
    return mb_per_s(size * static_cast<size_t>(count), Clock::now() - t0);
  }
  // `count` IN transfers, read into a buffer larger than the transfer so each ends at its terminating packet.
  double in(size_t size, int count) {
    std::vector<uint8_t> buf(size + mps);
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
      int done = 0;
      if (libusb_bulk_transfer(h, ep_in, buf.data(), static_cast<int>(buf.size()), &done, 10000) != 0 ||
          static_cast<size_t>(done) != size)
        die("raw bulk IN failed (" + std::to_string(done) + " bytes)");
    }
    return mb_per_s(size * static_cast<size_t>(count), Clock::now() - t0);
  }
};

struct Aisrv {
  std::optional<client::Client> c;
  std::vector<uint8_t> out;
  Aisrv(const client::UsbTarget& t, bool crc, size_t size) {
    auto transport = client::UsbTransport::open(t, client::ConnectOptions{}, client::UsbOptions{crc});
    if (!transport) die(transport.error().what());
    if (transport.value()->crc_active()) die("CRC active before the handshake");
    c.emplace(std::move(transport).value());
    if (auto st = c->handshake(); !st) die(st.error().what());
    const auto model = test::make_test_model(
        test::TestModelSpec{{static_cast<uint32_t>(size)}, {static_cast<uint32_t>(size)}, 1, 0});
    if (auto st = c->load_model(0, model); !st) die(st.error().what());
    if (auto st = c->set_input(0, 0, std::vector<uint8_t>(size, 1)); !st) die(st.error().what());
    if (auto st = c->start_inference(0); !st) die(st.error().what());
  }
  double set(size_t size, int count) {
    std::vector<uint8_t> data(size, 0x3C);
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i)
      if (auto st = c->set_input(0, 0, data); !st) die(st.error().what());
    return mb_per_s(size * static_cast<size_t>(count), Clock::now() - t0);
  }
  // Median round trip of HELLO (command packet, status, empty payload), microseconds.
  double hello_us(int count) {
    std::vector<double> us;
    for (int i = 0; i < count; ++i) {
      const auto t0 = Clock::now();
      if (auto st = c->hello(); !st) die(st.error().what());
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    return bench::percentile(us, 0.5);
  }
  double get(size_t size, int count) {
    // Into one buffer reused across calls, as the raw baseline reads into one buffer.
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i)
      if (auto st = c->get_output(0, 0, out); !st || out.size() != size) die("GET_OUTPUT_TENSOR failed");
    return mb_per_s(size * static_cast<size_t>(count), Clock::now() - t0);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string raw_target, aisrv_target;
  size_t size = 1u << 20;
  int count = 16, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--raw") raw_target = v;
    else if (a == "--aisrv") aisrv_target = v;
    else if (a == "--size") size = std::stoul(v);
    else if (a == "--count") count = std::stoi(v);
    else if (a == "--rounds") rounds = std::stoi(v);
    else die("unknown option " + a);
  }
  auto rt = client::parse_usb_target(raw_target);
  auto at = client::parse_usb_target(aisrv_target);
  if (!rt || !rt->vendor_id || !at) die("--raw usb:VID:PID and --aisrv usb:VID:PID are required");

  {
    // How fast CRC-32 runs here (the USB framing computes it on both sides): a diagnostic, not a benchmark figure.
    std::vector<uint8_t> block(4u << 20, 0x5A);
    const auto t0 = Clock::now();
    const uint32_t c = protocol::usb::crc32(0, block);
    std::fprintf(stderr, "bench_usb: crc32 over 4 MiB: %.1f MB/s (%08x)\n", mb_per_s(block.size(), Clock::now() - t0), c);
  }
  RawDevice raw(*rt);
  // Per mode one connection; each round measures a raw transfer series right before the aisrv series it is
  // compared with, so a change of load on the machine hits both alike. Ratios are per round, then the median.
  std::map<std::string, std::vector<double>> figures;
  for (bool crc : {false, true}) {
    const std::string m = crc ? "" : "_no_crc";
    Aisrv a(*at, crc, size);
    for (int r = 0; r < rounds; ++r) {
      const double ro = raw.out(size, count), set = a.set(size, count);
      const double ri = raw.in(size, count), get = a.get(size, count);
      figures["raw_out" + m].push_back(ro);
      figures["set" + m].push_back(set);
      figures["set_ratio" + m].push_back(set / ro);
      figures["raw_in" + m].push_back(ri);
      figures["get" + m].push_back(get);
      figures["get_ratio" + m].push_back(get / ri);
    }
    if (crc) figures["hello"].push_back(a.hello_us(20));
  }
  auto med = [&](const std::string& k) { return bench::percentile(figures[k], 0.5); };
  for (const char* k : {"set_ratio_no_crc", "get_ratio_no_crc", "set_ratio", "get_ratio"}) {  // the spread
    std::string line;
    for (double v : figures[k]) line += fmt::format(" {:.2f}", v);
    std::fprintf(stderr, "bench_usb: %s per round:%s\n", k, line.c_str());
  }
  // A diagnostic, not a figure with a baseline: what one command costs besides its payload on this machine.
  std::fprintf(stderr, "bench_usb: HELLO round trip %.0f us (median)\n", med("hello"));
  const std::string sz = size % (1u << 20) == 0 ? std::to_string(size >> 20) + "MiB" : std::to_string(size) + "B";
  for (const std::string m : {"", "_no_crc"}) {
    bench::report("usb_set_input_" + sz + m, med("set" + m), "MB/s", "raw_bulk_out_" + sz, med("raw_out" + m), "MB/s",
                  med("set_ratio" + m));
    bench::report("usb_get_output_" + sz + m, med("get" + m), "MB/s", "raw_bulk_in_" + sz, med("raw_in" + m), "MB/s",
                  med("get_ratio" + m));
  }
  return 0;
}
