// aisrv benchmarks — `tools/bench hailo` (run through tools/bench.d/hailo): Hailo-8 host transforms timed with
// Google Benchmark, each against a baseline measured in the same run, printed with bench_report.hpp's one-line
// format (median of 7 repetitions). Figures:
//   hailo.quantize_pad.nhwc      float32 640×640×3 frame → uint8 NHWC device frame (the order of the RGB inputs in
//                                the test HEFs), qp scale 1/255, vs memcpy of the float frame (the bytes it must read)
//   hailo.quantize_reorder.nhcw  the same into NHCW (yolov8n's input order: three channel rows per image row)
//   hailo.yolov8_nms       YOLOv8 host NMS over a full yolov8n output (110 classes; 40×40, 20×20, 10×10 grids with
//                          the HEF's padded widths 40/24/16 and its quantization), vs one read of the same bytes
// Google Benchmark options (--benchmark_filter=…, --benchmark_repetitions=…) are accepted.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/transform/layout.hpp"
#include "aisrv/engine/hailo8/transform/yolov8_nms.hpp"
#include "bench_report.hpp"

using namespace aisrv::engine::hailo8::transform;

namespace {

constexpr Shape kFrame{640, 640, 3};
const QuantInfo kPixelQp{0.0f, 1.0f / 255.0f, 0.0f, 1.0f};

std::vector<float> pixel_frame() {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<float> f(size_t{kFrame.height} * kFrame.width * kFrame.features);
  for (auto& x : f) x = static_cast<float>(byte(rng)) / 255.0f;
  return f;
}

void quantize_case(benchmark::State& state, FormatOrder order, Shape hw) {
  const auto host = pixel_frame();
  std::vector<uint8_t> dev(*device_frame_bytes(order, kFrame, hw, FormatType::uint8));
  for (auto _ : state) {
    auto s = quantize_to_device(host, kFrame, kPixelQp, order, hw, dev);
    if (!s) state.SkipWithError(s.error().message.c_str());
    benchmark::DoNotOptimize(dev.data());
    benchmark::ClobberMemory();
  }
}

void BM_quantize_pad_nhwc(benchmark::State& state) { quantize_case(state, FormatOrder::nhwc, {640, 640, 3}); }
void BM_quantize_nhcw(benchmark::State& state) { quantize_case(state, FormatOrder::nhcw, {640, 640, 3}); }

void BM_memcpy_frame(benchmark::State& state) {
  const auto host = pixel_frame();
  std::vector<float> copy(host.size());
  for (auto _ : state) {
    std::memcpy(copy.data(), host.data(), host.size() * sizeof(float));
    benchmark::DoNotOptimize(copy.data());
    benchmark::ClobberMemory();
  }
}

// yolov8n.hef (GURUKARTHIKC/Takumi): reg/cls pairs conv41/42, conv52/53, conv62/63 with their padded widths and qps.
struct Yolov8Data {
  Yolov8NmsConfig config;
  std::vector<std::vector<uint8_t>> reg, cls;
};

float f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

Yolov8Data yolov8n_output() {
  Yolov8Data d;
  auto& c = d.config;
  c.score_threshold = 0.2;
  c.iou_threshold = 0.7;
  c.max_boxes_per_class = 100;
  c.classes = 110;
  c.image_height = c.image_width = 640.0f;
  struct B {
    uint32_t stride, grid, pad_w;
    uint32_t reg_zp, reg_scale, cls_scale;
  };
  for (const B& b : {B{8, 40, 40, 0x42cc0000, 0x3e6d7a70, 0x3b66dc6a}, B{16, 20, 24, 0x42980000, 0x3e477dfa, 0x3b7bd7f1},
                     B{32, 10, 16, 0x42a00000, 0x3db862e6, 0x3b806f64}}) {
    Yolov8Branch br;
    br.stride = b.stride;
    br.reg_shape = {b.grid, b.grid, 64};
    br.reg_padded = {b.grid, b.pad_w, 64};
    br.reg_qp = {f32(b.reg_zp), f32(b.reg_scale), 0, 0};
    br.cls_shape = {b.grid, b.grid, 110};
    br.cls_padded = {b.grid, b.pad_w, 110};
    br.cls_qp = {0.0f, f32(b.cls_scale), 0, 0};
    c.branches.push_back(br);
  }
  // Background scores well below the threshold (q ≤ 40 ≈ 0.14), ~60 objects at q 150-250 on a few classes, each
  // spread over a few neighbouring cells as a detector does (so NMS has overlaps to suppress).
  std::mt19937 rng(3);
  for (const auto& br : c.branches) {
    std::vector<uint8_t> reg(size_t{br.reg_padded.height} * br.reg_padded.width * 64);
    std::vector<uint8_t> cls(size_t{br.cls_padded.height} * br.cls_padded.width * 110);
    std::uniform_int_distribution<int> reg_v(60, 140), low(0, 40), high(150, 250);
    for (auto& x : reg) x = static_cast<uint8_t>(reg_v(rng));
    for (auto& x : cls) x = static_cast<uint8_t>(low(rng));
    std::uniform_int_distribution<uint32_t> cell(0, br.cls_shape.height - 2), klass(0, 109);
    for (int o = 0; o < 20; ++o) {
      const uint32_t r0 = cell(rng), c0 = cell(rng), k = klass(rng);
      for (uint32_t dr = 0; dr < 2; ++dr) {
        for (uint32_t dc = 0; dc < 2; ++dc) {
          cls[(r0 + dr) * br.cls_padded.width * 110 + k * br.cls_padded.width + c0 + dc] =
              static_cast<uint8_t>(high(rng));
        }
      }
    }
    d.reg.push_back(std::move(reg));
    d.cls.push_back(std::move(cls));
  }
  return d;
}

void BM_yolov8_nms(benchmark::State& state) {
  auto d = yolov8n_output();
  auto op = Yolov8Nms::create(d.config);
  if (!op) {
    state.SkipWithError(op.error().message.c_str());
    return;
  }
  std::vector<std::span<const uint8_t>> regs(d.reg.begin(), d.reg.end()), clss(d.cls.begin(), d.cls.end());
  std::vector<float> out(op->output_floats());
  for (auto _ : state) {
    auto s = op->run(regs, clss, out);
    if (!s) state.SkipWithError(s.error().message.c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["candidates"] = static_cast<double>(op->last_candidates());
  state.counters["detections"] = static_cast<double>(op->last_detections());
}

void BM_read_yolov8_bytes(benchmark::State& state) {
  auto d = yolov8n_output();
  for (auto _ : state) {
    uint64_t sum = 0;
    for (const auto* set : {&d.reg, &d.cls}) {
      for (const auto& buf : *set) {
        uint32_t part = 0;
        for (uint8_t b : buf) part += b;
        sum += part;
      }
    }
    benchmark::DoNotOptimize(sum);
  }
}

// Collects the median of each benchmark (real time per iteration, in the benchmark's unit) instead of printing.
class Collector : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.error_occurred) {
        std::fprintf(stderr, "bench_hailo: %s failed: %s\n", run.benchmark_name().c_str(), run.error_message.c_str());
        failed = true;
        continue;
      }
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median") {
        median_us[run.run_name.function_name] = run.GetAdjustedRealTime();
      }
      if (run.run_type == Run::RT_Iteration) {
        for (const auto& [k, v] : run.counters) counters[run.run_name.function_name + "." + k] = v.value;
      }
    }
  }
  std::map<std::string, double> median_us;
  std::map<std::string, double> counters;
  bool failed = false;
};

void register_all() {
  auto reg = [](const char* name, void (*fn)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, fn)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.1)
        ->Repetitions(7)
        ->ReportAggregatesOnly(false);
  };
  reg("memcpy_frame", BM_memcpy_frame);
  reg("quantize_pad_nhwc", BM_quantize_pad_nhwc);
  reg("quantize_nhcw", BM_quantize_nhcw);
  reg("read_yolov8_bytes", BM_read_yolov8_bytes);
  reg("yolov8_nms", BM_yolov8_nms);
}

bool print_line(const Collector& c, const char* name, const char* value_key, const char* base_name,
                const char* base_key, double to_unit, const char* unit) {
  const auto v = c.median_us.find(value_key), b = c.median_us.find(base_key);
  if (v == c.median_us.end() || b == c.median_us.end()) return false;  // filtered out
  aisrv::bench::report(name, v->second * to_unit, unit, base_name, b->second * to_unit, unit, v->second / b->second);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_all();
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::Shutdown();
  print_line(collector, "hailo.quantize_pad.nhwc_640x640x3", "quantize_pad_nhwc", "memcpy_float_frame",
             "memcpy_frame", 1e-3, "ms");
  print_line(collector, "hailo.quantize_reorder.nhcw_640x640x3", "quantize_nhcw", "memcpy_float_frame",
             "memcpy_frame", 1e-3, "ms");
  if (print_line(collector, "hailo.yolov8_nms.yolov8n_110cls", "yolov8_nms", "read_output_bytes_once",
                 "read_yolov8_bytes", 1.0, "us")) {
    std::fprintf(stderr, "bench_hailo: yolov8_nms frame: %.0f candidates above the score threshold, %.0f boxes kept\n",
                 collector.counters["yolov8_nms.candidates"], collector.counters["yolov8_nms.detections"]);
  }
  return collector.failed ? 1 : 0;
}
