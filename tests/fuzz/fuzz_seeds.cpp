// aisrv fuzz seeds — writes a starting corpus for each fuzz target into DIR/<target>/, made with the protocol's own
// encoders: a request and a response frame of every command in the table, a valid record for every payload codec,
// USB command packets, SPI transactions (SYNC, BEGIN/DATA/POLL of a command with a payload), an interpreter session
// (model upload, inputs, inference, outputs, INFER, flash transfer, AUTH), a formatted flash store holding a model,
// pictures, and Frigate detector messages.
// The models and HEFs of the shared test data are further seeds, passed to the targets by tools/fuzz directly.
//   fuzz_seeds DIR
#include <png.h>
#include <turbojpeg.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "aisrv/flash/store.hpp"
#include "aisrv/protocol/bytes.hpp"
#include "aisrv/protocol/commands.h"
#include "aisrv/protocol/flash_payloads.hpp"
#include "aisrv/protocol/payloads.hpp"
#include "aisrv/protocol/spi_link.h"
#include "aisrv/protocol/stream_framing.hpp"
#include "aisrv/protocol/usb_link.hpp"
#include "flash/memory_flash.hpp"
#include "test_backend.hpp"

using namespace aisrv;
using namespace aisrv::protocol;
namespace fs = std::filesystem;

namespace {

fs::path g_root;
int g_count = 0;

void seed(const std::string& target, const std::string& name, const std::vector<uint8_t>& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ++g_count;
}

std::vector<uint8_t> with_selector(uint8_t selector, const std::vector<uint8_t>& record) {
  std::vector<uint8_t> v{selector};
  v.insert(v.end(), record.begin(), record.end());
  return v;
}

// One SPI transaction as fuzz_spi_link reads it: a length byte, then the frame.
void transaction(std::vector<uint8_t>& out, const aisrv_spi_request_t& r, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> frame(AISRV_SPI_OVERHEAD + payload.size());
  frame.resize(aisrv_spi_build_request(&r, payload.data(), frame.data()));
  out.push_back(static_cast<uint8_t>(frame.size()));
  out.insert(out.end(), frame.begin(), frame.end());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  g_root = argv[1];

  // Socket frames: every command, with and without a payload; responses.
  const std::vector<uint8_t> four{1, 2, 3, 4};
  for (unsigned i = 0; i < aisrv_command_count(); ++i) {
    const auto* row = aisrv_command_at(i);
    auto frame = stream::encode_request(Header{row->value, 0, 0}, row->kind == AISRV_KIND_GET ? std::vector<uint8_t>{} : four);
    auto more = stream::encode_request(Header{AISRV_CMD_HELLO, 1, 0}, {});
    frame.insert(frame.end(), more.begin(), more.end());
    seed("fuzz_stream_frame", std::string("req_") + row->name, frame);
  }
  seed("fuzz_stream_frame", "resp_ok", stream::encode_response(0, four));
  seed("fuzz_stream_frame", "resp_err", stream::encode_response(AISRV_STATUS_ERROR_DENIED, {}));

  // Payload records (the selector byte picks the decoder in fuzz_payloads).
  {
    std::vector<uint8_t> v;
    encode(Spec{4, 8, 12}, v);
    seed("fuzz_payloads", "spec", with_selector(0, v));
    v.clear();
    encode(VersionInfo{1, 1, 1, 0x3FF, 1u << 20, 2, "aisrvd seed"}, v);
    seed("fuzz_payloads", "version", with_selector(1, v));
    v.clear();
    TensorInfo t{"in0", DType::int8, {1, 4, 4, 3}, 48, -1, {0.5f}, {3}};
    TensorInfo pc{"w", DType::uint8, {2, 2}, 4, 1, {0.1f, 0.2f}, {0, 1}};
    encode(ModelTensors{"tflite", 1000, 4096, {t}, {t, pc}}, v);
    seed("fuzz_payloads", "tensor_info", with_selector(2, v));
    v.clear();
    encode(EngineInfo{"cpu", "kernels=opt", true, "tflite", 1000, "wire", 7, "1"}, v);
    seed("fuzz_payloads", "engine_info", with_selector(3, v));
    v.clear();
    encode(TimingRecord{10, 20, 30, {{"conv", "CONV_2D", 5}, {"fc", "FULLY_CONNECTED", 6}}}, v);
    seed("fuzz_payloads", "timing_record", with_selector(4, v));
    seed("fuzz_payloads", "timings", with_selector(5, {1, 0, 0, 0, 2, 0, 0, 0}));
    v.clear();
    const InferTensor ins[] = {{0, four}, {1, std::span<const uint8_t>(four).first(2)}};
    encode_infer_request(ins, v);
    seed("fuzz_payloads", "infer_request", with_selector(6, v));
    v.clear();
    const std::span<const uint8_t> outs[] = {four, {}};
    encode_infer_answer(outs, v);
    seed("fuzz_payloads", "infer_answer", with_selector(7, v));
    v.clear();
    encode(SessionInfo{7, "unix", "uid 1000", Role::user, true, 100, 1000, 16, 3}, v);
    seed("fuzz_payloads", "session_info", with_selector(8, v));
    v.clear();
    encode(ModelMetadata{{{"task", "detection"}, {"labels", "person\nkite\n"}}}, v);
    seed("fuzz_payloads", "model_metadata", with_selector(15, v));
    v.clear();
    encode(FlashBegin{1000, 0x1234, 1, "model"}, v);
    seed("fuzz_payloads", "flash_begin", with_selector(9, v));
    v.clear();
    encode_flash_chunk(64, four, v);
    seed("fuzz_payloads", "flash_chunk", with_selector(10, v));
    v.clear();
    FlashCatalogue cat;
    cat.store_size = 1 << 20;
    cat.erase_block = 4096;
    cat.write_size = 1;
    cat.data_bytes = 1 << 19;
    cat.free_bytes = 1 << 18;
    cat.read_chunk = 1 << 20;
    cat.device = "file seed";
    FlashEntry e;
    e.client = 0;
    e.seq = 2;
    e.active = FlashSlotInfo{0, "m", 1, 1000, 0x99, 2, 0};
    e.writing = true;
    e.received = 10;
    e.expected = 20;
    cat.entries.push_back(e);
    encode(cat, v);
    seed("fuzz_payloads", "flash_catalogue", with_selector(11, v));
    v.clear();
    encode(FlashWriteState{true, 1, 64, 64, 1000}, v);
    seed("fuzz_payloads", "flash_write_state", with_selector(12, v));
  }

  // USB: command packets (with and without the CRC flag), a LAST_ERROR record, packet runs.
  {
    std::array<uint8_t, kHeaderSize> p{};
    usb::encode_command_packet(Header{AISRV_CMD_SET_INPUT_TENSOR, 1, 0}, true, p);
    std::vector<uint8_t> v(p.begin(), p.end());
    v.insert(v.end(), {0, 64, 1, 2, 3, 0});
    seed("fuzz_usb_link", "command_crc", v);
    seed("fuzz_usb_link", "last_error",
         usb::encode_last_error(usb::LastError{AISRV_STATUS_ERROR_BAD_CMD, 1, "seed reason"}, 250));
  }

  // SPI: SYNC, then HELLO (no payload) and SET_INPUT_TENSOR with a payload in two chunks, then POLLs.
  {
    std::vector<uint8_t> t;
    aisrv_spi_request_t r{};
    r.type = AISRV_SPI_SYNC;
    r.total = 256;
    transaction(t, r, {});
    r = {};
    r.type = AISRV_SPI_BEGIN;
    r.seq = 1;
    r.xfer = 1;
    r.cmd = AISRV_CMD_HELLO;
    transaction(t, r, {});
    r = {};
    r.type = AISRV_SPI_POLL;
    r.seq = 2;
    r.xfer = 1;
    r.want = 16;
    transaction(t, r, {});
    std::vector<uint8_t> payload(300, 7);
    r = {};
    r.type = AISRV_SPI_BEGIN;
    r.seq = 3;
    r.xfer = 2;
    r.cmd = AISRV_CMD_SET_INPUT_TENSOR;
    r.total = 300;
    r.length = 200;
    transaction(t, r, std::vector<uint8_t>(payload.begin(), payload.begin() + 200));
    r.type = AISRV_SPI_DATA;
    r.seq = 4;
    r.offset = 200;
    r.length = 100;
    transaction(t, r, std::vector<uint8_t>(payload.begin() + 200, payload.end()));
    r = {};
    r.type = AISRV_SPI_POLL;
    r.seq = 5;
    r.xfer = 2;
    r.want = 64;
    transaction(t, r, {});
    seed("fuzz_spi_link", "sync_hello_set_poll", t);
  }

  // Interpreter sessions (fuzz_interpreter's grammar): model upload by the admin, inputs, inference, outputs; INFER;
  // a user trying to load a model; AUTH by the TCP session; a flash transfer.
  {
    std::vector<uint8_t> s;
    auto cmd = [&](uint8_t who, uint32_t opcode, uint8_t engine, uint8_t tensor, const std::vector<uint8_t>& payload) {
      unsigned index = 0;
      for (unsigned i = 0; i < aisrv_command_count(); ++i)
        if (aisrv_command_at(i)->value == opcode) index = i;
      s.insert(s.end(), {static_cast<uint8_t>(who | (2 << 2)), static_cast<uint8_t>(index), engine, tensor,
                         static_cast<uint8_t>(payload.size()), static_cast<uint8_t>(payload.size() >> 8)});
      s.insert(s.end(), payload.begin(), payload.end());
    };
    s.insert(s.end(), {static_cast<uint8_t>(0 | (1 << 2)), 3, 4, 2, 2, 0});  // admin: model 4 in, 5+2 out, engine 0
    cmd(0, AISRV_CMD_SET_INPUT_TENSOR, 0, 0, {1, 2, 3, 4});
    cmd(0, AISRV_CMD_START_INFER, 0, 0, {});
    cmd(0, AISRV_CMD_GET_OUTPUT_TENSOR, 0, 0, {});
    std::vector<uint8_t> req;
    const InferTensor in0[] = {{0, four}};
    encode_infer_request(in0, req);
    cmd(1, AISRV_CMD_INFER, 0, 0, req);
    cmd(1, AISRV_CMD_SET_MODEL_SECONDARY, 0, 0, test::make_test_model({}));
    const std::string token = "fuzz-token-0123456789";
    cmd(2, AISRV_CMD_GET_STATUS, 0, 0, {});
    cmd(2, AISRV_CMD_AUTH, 0, 0, std::vector<uint8_t>(token.begin(), token.end()));
    cmd(2, AISRV_CMD_GET_SESSION_INFO, 0, 0, {});
    std::vector<uint8_t> begin;
    const auto model = test::make_test_model({{4}, {4}, 1, 0, 100});
    encode(FlashBegin{model.size(), std::nullopt, 0, "seed"}, begin);
    cmd(0, AISRV_CMD_SET_FLASH_BEGIN, 1, 0, begin);
    std::vector<uint8_t> chunk;
    encode_flash_chunk(0, model, chunk);
    cmd(0, AISRV_CMD_SET_FLASH_CHUNK, 1, 0, chunk);
    cmd(0, AISRV_CMD_SET_FLASH_COMMIT, 1, 0, {});
    cmd(0, AISRV_CMD_SET_MODEL_SECONDARY_FLASH, 1, 0, {});
    cmd(1, AISRV_CMD_GET_DEBUG_LOG, 0, 250, {});
    seed("fuzz_interpreter", "session_walk", s);
  }

  // A formatted store holding one model and an unfinished transfer.
  {
    test::MemoryFlash dev(flash::Geometry{64u * 4096, 4096, 1});
    flash::FormatOptions fo;
    fo.clients = 2;
    auto store = std::move(flash::ModelStore::format(dev, fo)).value();
    (void)store->write_model(0, "seed", test::make_test_model({{4}, {4}, 1, 0, 5000}));
    flash::UpdateInfo info;
    info.name = "half";
    info.sizes[0] = 9000;
    (void)store->begin_update(1, info);
    (void)store->write_chunk(1, flash::SegmentKind::model, 0, std::vector<uint8_t>(3000, 0x42));
    store.reset();
    seed("fuzz_flash_store", "store_with_model", dev.bytes());
  }
  // Pictures for fuzz_image: PNG (grey, RGB), JPEG (4:2:0, grey), a 24-bit BMP and a PPM, 13 x 9 gradients.
  {
    const uint32_t w = 13, h = 9;
    std::vector<uint8_t> rgb(w * h * 3), grey(w * h);
    for (uint32_t i = 0; i < w * h; ++i) {
      grey[i] = static_cast<uint8_t>(i * 2);
      for (uint32_t c = 0; c < 3; ++c) rgb[i * 3 + c] = static_cast<uint8_t>(i * 3 + c * 40);
    }
    for (bool colour : {false, true}) {
      png_image png;
      std::memset(&png, 0, sizeof png);
      png.version = PNG_IMAGE_VERSION;
      png.width = w;
      png.height = h;
      png.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
      png_alloc_size_t size = 1 << 16;
      std::vector<uint8_t> out(size);
      if (png_image_write_to_memory(&png, out.data(), &size, 0, colour ? rgb.data() : grey.data(), 0, nullptr)) {
        out.resize(size);
        seed("fuzz_image", colour ? "rgb.png" : "grey.png", out);
      }
      tjhandle tj = tjInitCompress();
      unsigned char* jpeg = nullptr;
      unsigned long jpeg_size = 0;
      if (tjCompress2(tj, colour ? rgb.data() : grey.data(), w, 0, h, colour ? TJPF_RGB : TJPF_GRAY, &jpeg, &jpeg_size,
                      colour ? TJSAMP_420 : TJSAMP_GRAY, 75, 0) == 0)
        seed("fuzz_image", colour ? "rgb.jpg" : "grey.jpg", std::vector<uint8_t>(jpeg, jpeg + jpeg_size));
      tjFree(jpeg);
      tjDestroy(tj);
    }
    const uint32_t row = (w * 3 + 3) / 4 * 4;
    std::vector<uint8_t> bmp(54 + row * h);
    auto put32 = [&](size_t at, uint32_t v) {
      for (int i = 0; i < 4; ++i) bmp[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
    };
    bmp[0] = 'B';
    bmp[1] = 'M';
    put32(2, static_cast<uint32_t>(bmp.size()));
    put32(10, 54);
    put32(14, 40);
    put32(18, w);
    put32(22, h);
    bmp[26] = 1;
    bmp[28] = 24;
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w * 3; ++x) bmp[54 + y * row + x] = rgb[(h - 1 - y) * w * 3 + x];
    seed("fuzz_image", "rgb.bmp", bmp);
    const std::string head = "P6\n13 9\n255\n";
    std::vector<uint8_t> ppm(head.begin(), head.end());
    ppm.insert(ppm.end(), rgb.begin(), rgb.end());
    seed("fuzz_image", "rgb.ppm", ppm);
  }
  // Frigate messages for fuzz_frigate: a part count byte, then each part but the last with a u16 length.
  {
    auto message = [](std::initializer_list<std::string> parts) {
      std::vector<uint8_t> out{static_cast<uint8_t>(parts.size() - 1)};
      size_t i = 0;
      for (const std::string& p : parts) {
        if (++i < parts.size()) {
          out.push_back(static_cast<uint8_t>(p.size()));
          out.push_back(static_cast<uint8_t>(p.size() >> 8));
        }
        out.insert(out.end(), p.begin(), p.end());
      }
      return out;
    };
    seed("fuzz_frigate", "detect_4x4",
         message({R"({"shape": [1, 4, 4, 3], "dtype": "uint8", "model_type": "ssd"})", std::string(48, '\x40')}));
    seed("fuzz_frigate", "model_request", message({R"({"model_request": true, "model_name": "yolov8n.tflite"})"}));
    seed("fuzz_frigate", "model_data",
         message({R"({"model_data": true, "model_name": "m.tflite"})", std::string("TFL3") + std::string(60, '\0')}));
    std::string boxes;
    for (const double v : {0.9, 10.0, 20.0, 100.0, 200.0, 0.5, 700.0, -5.0, -10.0, 900.0}) {
      char b[sizeof v];
      std::memcpy(b, &v, sizeof v);
      boxes.append(b, sizeof v);
    }
    seed("fuzz_frigate", "rows", message({R"({"shape": [1, 1, 1, 80], "dtype": "uint8"})", boxes}));
  }
  std::printf("fuzz_seeds: %d seeds in %s\n", g_count, g_root.c_str());
  return 0;
}
