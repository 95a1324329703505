// aisrv benchmarks — the CPU engine against XNNPACK (Debian's libxnnpack-dev, a benchmark-only baseline that no
// product target links): every model of ../shared/testdata/expected/cases.json whose operators XNNPACK's subgraph
// API can express is built there operator by operator (xnn_define_* from the engine's own reading of the .tflite),
// both run on one thread pinned to the same core, interleaved round by round, and the median of the per-round
// paired ratios is printed as
//   bench cpu_MODEL_vs_xnnpack: T ms vs XNNPACK T ms = R x      (R = XNNPACK's time / the engine's: > 1 = faster)
// Before timing, XNNPACK's output is compared with the reference bytes and with the engine's output (the maximum
// absolute difference is printed: XNNPACK requantizes with its own rounding and its SOFTMAX is float, so it may
// differ by a few LSB; the engine must match the reference bytes exactly or the model is an error).
// How the translation stays honest: PADs feeding a VALID convolution become that convolution's explicit padding
// (exact: XNNPACK pads quantized convolutions with the input zero point, as the engine's folded pads do); a
// TRANSPOSE of the graph input runs on the host inside XNNPACK's timed region; SOFTMAX runs as convert -> float
// softmax -> convert (XNNPACK 2022 has no quantized softmax node).
//
//   bench_cpu_xnnpack [--model SUBSTRING] [--min-runs N] [--seconds S] [--layers] [--simd LEVEL] [--threads K]
//     --layers   also time every operator alone in XNNPACK (one single-node runtime per operator, fed its real
//                input shape) beside the engine's per-operator time from the same interleaved rounds
//     --simd     the engine's SIMD level (default: the best this processor runs)
//     --threads  also both on K threads, unpinned (XNNPACK on its pthreadpool), each against its own one thread:
//                what this machine gives a thread pool, measured on XNNPACK beside the engine (run_threads)
#include <CLI/CLI.hpp>
#include <pthread.h>
#include <sched.h>
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "bench_report.hpp"
#include "graph.hpp"
#include "interpreter.hpp"
#include "model_reader.hpp"
#include "testdata.hpp"

using namespace aisrv;
using namespace aisrv::engine::cpu;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string model_filter;
  int min_runs = 30;
  double seconds = 4.0;
  bool layers = false;
  std::optional<SimdLevel> simd;
  size_t threads = 1;  // > 1: also both engines on this many threads (unpinned), against each one's single thread
};

std::string stem(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string s = path.substr(slash == std::string::npos ? 0 : slash + 1);
  const auto dot = s.rfind(".tflite");
  return dot == std::string::npos ? s : s.substr(0, dot);
}

double median(std::vector<double> v) { return bench::percentile(std::move(v), 0.5); }

// A buffer XNNPACK may read XNN_EXTRA_BYTES past.
struct PaddedBuffer {
  std::vector<uint8_t> bytes;
  size_t size = 0;
  explicit PaddedBuffer(size_t n = 0) : bytes(n + XNN_EXTRA_BYTES), size(n) {}
  uint8_t* data() { return bytes.data(); }
};

std::pair<float, float> activation_range(Activation a) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  switch (a) {
    case Activation::relu: return {0.0f, inf};
    case Activation::relu6: return {0.0f, 6.0f};
    case Activation::relu_n1_to_1: return {-1.0f, 1.0f};
    default: return {-inf, inf};
  }
}

std::vector<size_t> dims_of(const Shape& s) {
  std::vector<size_t> d;
  for (int i = 0; i < s.rank; ++i) d.push_back(static_cast<size_t>(s[i]));
  return d;
}

// The constant int32 values of tensor `t` (PAD paddings, TRANSPOSE permutation, MEAN axes).
std::vector<int32_t> constant_ints(const Graph& g, int32_t t) {
  const TensorSpec& s = g.tensors[static_cast<size_t>(t)];
  std::vector<int32_t> v(s.bytes / 4);
  if (s.data && s.type == DType::int32) std::memcpy(v.data(), s.data, v.size() * 4);
  return v;
}

// One XNNPACK subgraph + runtime over a range of the model's operators (the whole model, or one operator).
class XnnNet {
 public:
  ~XnnNet() {
    if (runtime_) xnn_delete_runtime(runtime_);
    if (subgraph_) xnn_delete_subgraph(subgraph_);
  }

  // Builds operators [first, last) of `g`. Inputs of the range that no operator in it produced become external
  // inputs (with buffers), its last operator's output the external output. "" on success, else why not.
  std::string build(const Graph& g, size_t first, size_t last, pthreadpool_t threads = nullptr) {
    g_ = &g;
    if (xnn_create_subgraph(static_cast<uint32_t>(g.tensors.size()), 0, &subgraph_) != xnn_status_success)
      return "xnn_create_subgraph failed";
    consumers_.assign(g.tensors.size(), 0);
    for (const OperatorSpec& op : g.operators)
      for (int32_t t : op.inputs)
        if (t >= 0) ++consumers_[static_cast<size_t>(t)];
    produced_.assign(g.tensors.size(), false);
    output_tensor_ = g.operators[last - 1].outputs.at(0);
    for (size_t i = first; i < last; ++i) {
      const std::string why = define(i, first);
      if (!why.empty()) return why;
    }
    if (const xnn_status st = xnn_create_runtime_v2(subgraph_, threads, 0, &runtime_); st != xnn_status_success)
      return "xnn_create_runtime_v2 failed (" + std::to_string(st) + ")";
    output_ = PaddedBuffer(g.tensors[static_cast<size_t>(output_tensor_)].bytes);
    std::vector<xnn_external_value> ext;
    for (auto& [t, buf] : inputs_) ext.push_back({static_cast<uint32_t>(t), buf.data()});
    ext.push_back({static_cast<uint32_t>(output_tensor_), output_.data()});
    if (xnn_setup_runtime(runtime_, ext.size(), ext.data()) != xnn_status_success) return "xnn_setup_runtime failed";
    return "";
  }

  // The external input buffers, keyed by tensor index (the graph input comes first for a whole model).
  std::map<int32_t, PaddedBuffer>& inputs() { return inputs_; }
  std::span<const uint8_t> output() { return {output_.data(), output_.size}; }
  // A TRANSPOSE of the graph input done on the host before the run: (source tensor, permutation), or none.
  bool has_host_transpose() const { return !perm_.empty(); }

  // Runs the host-side TRANSPOSE (if any) from `graph_input` and the runtime.
  bool run(std::span<const uint8_t> graph_input) {
    if (!perm_.empty()) transpose_input(graph_input);
    return xnn_invoke_runtime(runtime_) == xnn_status_success;
  }

 private:
  // The XNNPACK value of tensor t; defined on first use with `dims` (default: the tensor's shape).
  std::string value(int32_t t, uint32_t& id, const std::vector<size_t>* dims = nullptr, bool weights = false,
                    size_t channel_dim = 0) {
    if (defined_.count(t)) {
      id = static_cast<uint32_t>(t);
      return "";
    }
    const TensorSpec& s = g_->tensors[static_cast<size_t>(t)];
    const std::vector<size_t> d = dims ? *dims : dims_of(s.shape);
    uint32_t flags = 0;
    const bool constant = s.is_constant();
    if (t == output_tensor_) flags |= XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
    if (!constant && !produced_[static_cast<size_t>(t)]) {
      flags |= XNN_VALUE_FLAG_EXTERNAL_INPUT;
      inputs_.emplace(t, PaddedBuffer(s.bytes));
    }
    if (!s.quant.present()) return "tensor " + s.name + " is not quantized";
    xnn_datatype type = xnn_datatype_invalid;
    xnn_status st;
    if (s.quant.per_channel() || (weights && s.type == DType::int32 && per_channel_weights_)) {
      // Per-channel int8 weights and their int32 bias (per-tensor weights are qint8 / quint8 with a qint32 bias).
      if (weights && s.type != DType::int32) per_channel_weights_ = true;
      type = s.type == DType::int32 ? xnn_datatype_qcint32 : xnn_datatype_qcint8;
      const size_t channels = d.at(channel_dim);
      if (s.quant.per_channel() && s.quant.scale.size() != channels)
        return "tensor " + s.name + " has " + std::to_string(s.quant.scale.size()) + " scales for " +
               std::to_string(channels) + " channels";
      std::vector<float>& scales = scales_.emplace_back(channels);
      for (size_t c = 0; c < channels; ++c) scales[c] = s.quant.scale[s.quant.per_channel() ? c : 0];
      st = xnn_define_channelwise_quantized_tensor_value(subgraph_, type, scales.data(), d.size(), channel_dim,
                                                         d.data(), s.data, static_cast<uint32_t>(t), flags, &id);
    } else {
      if (s.type == DType::int8) type = xnn_datatype_qint8;
      else if (s.type == DType::uint8) type = xnn_datatype_quint8;
      else if (s.type == DType::int32) type = xnn_datatype_qint32;
      else return "tensor " + s.name + " has a type XNNPACK's quantized nodes do not take";
      st = xnn_define_quantized_tensor_value(subgraph_, type, static_cast<int32_t>(s.quant.zero_point[0]),
                                             s.quant.scale[0], d.size(), d.data(), s.data,
                                             static_cast<uint32_t>(t), flags, &id);
    }
    if (st != xnn_status_success) return "defining tensor " + s.name + " failed (" + std::to_string(st) + ")";
    defined_.insert(t);
    return "";
  }

  std::string output_value(int32_t t, uint32_t& id, const std::vector<size_t>* dims = nullptr) {
    produced_[static_cast<size_t>(t)] = true;
    return value(t, id, dims);
  }

  void transpose_input(std::span<const uint8_t> in) {
    // 4-D permutation of bytes: out[i0,i1,i2,i3] = in[...] with out dim k = in dim perm[k].
    const TensorSpec& src = g_->tensors[static_cast<size_t>(perm_src_)];
    PaddedBuffer& dst = inputs_.at(perm_dst_);
    int64_t in_dims[4], in_stride[4];
    for (int k = 0; k < 4; ++k) in_dims[k] = src.shape[k];
    in_stride[3] = 1;
    for (int k = 2; k >= 0; --k) in_stride[k] = in_stride[k + 1] * in_dims[k + 1];
    const int64_t o0 = in_dims[perm_[0]], o1 = in_dims[perm_[1]], o2 = in_dims[perm_[2]], o3 = in_dims[perm_[3]];
    const int64_t s0 = in_stride[perm_[0]], s1 = in_stride[perm_[1]], s2 = in_stride[perm_[2]],
                  s3 = in_stride[perm_[3]];
    uint8_t* out = dst.data();
    for (int64_t a = 0; a < o0; ++a)
      for (int64_t b = 0; b < o1; ++b)
        for (int64_t c = 0; c < o2; ++c) {
          const uint8_t* p = in.data() + a * s0 + b * s1 + c * s2;
          for (int64_t d = 0; d < o3; ++d) *out++ = p[d * s3];
        }
  }

  std::string define(size_t i, size_t first) {
    const Graph& g = *g_;
    const OperatorSpec& op = g.operators[i];
    const auto code = static_cast<BuiltinOp>(op.code);
    uint32_t in = 0, out = 0, w = 0, b = XNN_INVALID_VALUE_ID;
    std::string why;
    const int32_t x = op.inputs.empty() ? -1 : op.inputs[0];
    const int32_t y = op.outputs.empty() ? -1 : op.outputs[0];
    per_channel_weights_ = false;
    std::array<uint32_t, 4> pad{0, 0, 0, 0};  // top right bottom left, from a folded PAD
    int32_t conv_input = x;
    if (auto it = folded_.find(x); it != folded_.end()) {
      pad = it->second.second;
      conv_input = it->second.first;
    }
    switch (code) {
      case BuiltinOp::transpose: {
        if (i != first || std::find(g.inputs.begin(), g.inputs.end(), x) == g.inputs.end())
          return "TRANSPOSE inside the graph";
        const std::vector<int32_t> perm = constant_ints(g, op.inputs.at(1));
        if (perm.size() != 4 || g.tensors[static_cast<size_t>(x)].bytes !=
                                    static_cast<size_t>(g.tensors[static_cast<size_t>(x)].shape.elements()))
          return "TRANSPOSE other than 4-D bytes";
        perm_.assign(perm.begin(), perm.end());
        perm_src_ = x;
        perm_dst_ = y;
        // y becomes the external input of the XNNPACK graph.
        return value(y, out);
      }
      case BuiltinOp::pad:
      case BuiltinOp::padv2: {
        const std::vector<int32_t> p = constant_ints(g, op.inputs.at(1));
        const bool spatial_only = p.size() == 8 && p[0] == 0 && p[1] == 0 && p[6] == 0 && p[7] == 0;
        if (spatial_only && consumers_[static_cast<size_t>(y)] == 1)
          for (size_t j = i + 1; j < g.operators.size(); ++j) {
            const OperatorSpec& next = g.operators[j];
            if (next.inputs.empty() || next.inputs[0] != y) continue;
            const auto nc = static_cast<BuiltinOp>(next.code);
            bool valid = false;
            if (nc == BuiltinOp::conv_2d)
              valid = std::get<Conv2DOptions>(next.options).padding == PaddingKind::valid;
            if (nc == BuiltinOp::depthwise_conv_2d)
              valid = std::get<DepthwiseConv2DOptions>(next.options).padding == PaddingKind::valid;
            if (valid && op.inputs.size() < 3) {
              folded_[y] = {x, {static_cast<uint32_t>(p[2]), static_cast<uint32_t>(p[5]), static_cast<uint32_t>(p[3]),
                                static_cast<uint32_t>(p[4])}};
              return "";
            }
          }
        if ((why = value(x, in)).size()) return why;
        if ((why = output_value(y, out)).size()) return why;
        std::vector<size_t> pre, post;
        for (size_t k = 0; k + 1 < p.size(); k += 2) {
          pre.push_back(static_cast<size_t>(p[k]));
          post.push_back(static_cast<size_t>(p[k + 1]));
        }
        if (xnn_define_static_constant_pad(subgraph_, pre.data(), post.data(), 0.0f, in, out, 0) != xnn_status_success)
          return "xnn_define_static_constant_pad failed";
        return "";
      }
      case BuiltinOp::conv_2d: {
        const auto& o = std::get<Conv2DOptions>(op.options);
        const TensorSpec& f = g.tensors[static_cast<size_t>(op.inputs.at(1))];
        const TensorSpec& xs = g.tensors[static_cast<size_t>(conv_input)];
        if ((why = value(conv_input, in)).size()) return why;
        if ((why = value(op.inputs[1], w, nullptr, true, 0)).size()) return why;
        if (op.inputs.size() > 2 && op.inputs[2] >= 0 && (why = value(op.inputs[2], b, nullptr, true, 0)).size())
          return why;
        if ((why = output_value(y, out)).size()) return why;
        const auto [lo, hi] = activation_range(o.activation);
        const uint32_t flags = o.padding == PaddingKind::same ? XNN_FLAG_TENSORFLOW_SAME_PADDING : 0;
        if (xnn_define_convolution_2d(subgraph_, pad[0], pad[1], pad[2], pad[3], static_cast<uint32_t>(f.shape[1]),
                                      static_cast<uint32_t>(f.shape[2]), static_cast<uint32_t>(o.stride_h),
                                      static_cast<uint32_t>(o.stride_w), static_cast<uint32_t>(o.dilation_h),
                                      static_cast<uint32_t>(o.dilation_w), 1, static_cast<size_t>(xs.shape[3]),
                                      static_cast<size_t>(f.shape[0]), lo, hi, in, w, b, out,
                                      flags) != xnn_status_success)
          return "xnn_define_convolution_2d failed";
        return "";
      }
      case BuiltinOp::depthwise_conv_2d: {
        const auto& o = std::get<DepthwiseConv2DOptions>(op.options);
        const TensorSpec& f = g.tensors[static_cast<size_t>(op.inputs.at(1))];
        const TensorSpec& xs = g.tensors[static_cast<size_t>(conv_input)];
        if ((why = value(conv_input, in)).size()) return why;
        if ((why = value(op.inputs[1], w, nullptr, true, 3)).size()) return why;
        if (op.inputs.size() > 2 && op.inputs[2] >= 0 && (why = value(op.inputs[2], b, nullptr, true, 0)).size())
          return why;
        if ((why = output_value(y, out)).size()) return why;
        const auto [lo, hi] = activation_range(o.activation);
        const uint32_t flags = o.padding == PaddingKind::same ? XNN_FLAG_TENSORFLOW_SAME_PADDING : 0;
        const int32_t dm = std::max(1, o.depth_multiplier);
        if (xnn_define_depthwise_convolution_2d(
                subgraph_, pad[0], pad[1], pad[2], pad[3], static_cast<uint32_t>(f.shape[1]),
                static_cast<uint32_t>(f.shape[2]), static_cast<uint32_t>(o.stride_h), static_cast<uint32_t>(o.stride_w),
                static_cast<uint32_t>(o.dilation_h), static_cast<uint32_t>(o.dilation_w), static_cast<uint32_t>(dm),
                static_cast<size_t>(xs.shape[3]), lo, hi, in, w, b, out, flags) != xnn_status_success)
          return "xnn_define_depthwise_convolution_2d failed";
        return "";
      }
      case BuiltinOp::fully_connected: {
        const auto& o = std::get<FullyConnectedOptions>(op.options);
        const TensorSpec& f = g.tensors[static_cast<size_t>(op.inputs.at(1))];
        const TensorSpec& ys = g.tensors[static_cast<size_t>(y)];
        if ((why = value(x, in)).size()) return why;
        if ((why = value(op.inputs[1], w, nullptr, true, 0)).size()) return why;
        if (op.inputs.size() > 2 && op.inputs[2] >= 0 && (why = value(op.inputs[2], b, nullptr, true, 0)).size())
          return why;
        const size_t n_out = static_cast<size_t>(f.shape[0]);
        const std::vector<size_t> d2{static_cast<size_t>(ys.shape.elements()) / n_out, n_out};
        if ((why = output_value(y, out, &d2)).size()) return why;
        const auto [lo, hi] = activation_range(o.activation);
        if (xnn_define_fully_connected(subgraph_, lo, hi, in, w, b, out, XNN_FLAG_TENSORFLOW_RESHAPE_2D) !=
            xnn_status_success)
          return "xnn_define_fully_connected failed";
        return "";
      }
      case BuiltinOp::add: {
        const auto& o = std::get<AddOptions>(op.options);
        uint32_t in2 = 0;
        if ((why = value(x, in)).size()) return why;
        if ((why = value(op.inputs.at(1), in2)).size()) return why;
        if ((why = output_value(y, out)).size()) return why;
        const auto [lo, hi] = activation_range(o.activation);
        if (xnn_define_add2(subgraph_, lo, hi, in, in2, out, 0) != xnn_status_success) return "xnn_define_add2 failed";
        return "";
      }
      case BuiltinOp::average_pool_2d:
      case BuiltinOp::mean: {
        const TensorSpec& xs = g.tensors[static_cast<size_t>(x)];
        if (xs.shape.rank != 4) return "pooling of a non-4-D tensor";
        auto lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
        if (code == BuiltinOp::average_pool_2d) {
          const auto& o = std::get<Pool2DOptions>(op.options);
          if (o.filter_h != xs.shape[1] || o.filter_w != xs.shape[2] || o.padding != PaddingKind::valid)
            return "AVERAGE_POOL_2D that is not global";
          std::tie(lo, hi) = activation_range(o.activation);
        } else {
          std::vector<int32_t> axes = constant_ints(g, op.inputs.at(1));
          std::sort(axes.begin(), axes.end());
          if (axes != std::vector<int32_t>{1, 2}) return "MEAN over other axes than H, W";
        }
        const std::vector<size_t> d4{static_cast<size_t>(xs.shape[0]), 1, 1, static_cast<size_t>(xs.shape[3])};
        if ((why = value(x, in)).size()) return why;
        if ((why = output_value(y, out, &d4)).size()) return why;
        if (xnn_define_global_average_pooling_2d(subgraph_, lo, hi, in, out, 0) != xnn_status_success)
          return "xnn_define_global_average_pooling_2d failed";
        return "";
      }
      case BuiltinOp::reshape:
      case BuiltinOp::squeeze: {
        const std::vector<size_t> d = dims_of(g.tensors[static_cast<size_t>(y)].shape);
        if ((why = value(x, in)).size()) return why;
        if ((why = output_value(y, out)).size()) return why;
        if (xnn_define_static_reshape(subgraph_, d.size(), d.data(), in, out, 0) != xnn_status_success)
          return "xnn_define_static_reshape failed";
        return "";
      }
      case BuiltinOp::softmax: {
        const TensorSpec& xs = g.tensors[static_cast<size_t>(x)];
        const std::vector<size_t> d = dims_of(xs.shape);
        if ((why = value(x, in)).size()) return why;
        if ((why = output_value(y, out)).size()) return why;
        uint32_t f_in = 0, f_out = 0;
        if (xnn_define_tensor_value(subgraph_, xnn_datatype_fp32, d.size(), d.data(), nullptr, XNN_INVALID_VALUE_ID,
                                    0, &f_in) != xnn_status_success ||
            xnn_define_tensor_value(subgraph_, xnn_datatype_fp32, d.size(), d.data(), nullptr, XNN_INVALID_VALUE_ID,
                                    0, &f_out) != xnn_status_success)
          return "defining the float softmax tensors failed";
        if (xnn_define_convert(subgraph_, in, f_in, 0) != xnn_status_success) return "xnn_define_convert (in) failed";
        if (xnn_define_softmax(subgraph_, f_in, f_out, 0) != xnn_status_success) return "xnn_define_softmax failed";
        if (xnn_define_convert(subgraph_, f_out, out, 0) != xnn_status_success)
          return "xnn_define_convert (out) failed";
        return "";
      }
      default:
        return "operator code " + std::to_string(op.code) + " has no XNNPACK translation here";
    }
  }

  const Graph* g_ = nullptr;
  xnn_subgraph_t subgraph_ = nullptr;
  xnn_runtime_t runtime_ = nullptr;
  std::set<int32_t> defined_;
  std::vector<int> consumers_;
  std::vector<bool> produced_;
  std::map<int32_t, PaddedBuffer> inputs_;
  std::map<int32_t, std::pair<int32_t, std::array<uint32_t, 4>>> folded_;  // PAD output -> (PAD input, pads)
  std::deque<std::vector<float>> scales_;  // XNNPACK keeps pointers to the per-channel scales
  PaddedBuffer output_;
  bool per_channel_weights_ = false;  // the weights of the operator being defined (its bias follows them)
  int32_t output_tensor_ = -1;
  std::vector<int> perm_;
  int32_t perm_src_ = -1, perm_dst_ = -1;
};

struct Case {
  std::string model;
  std::vector<uint8_t> input;
  std::vector<uint8_t> want;  // output 0's reference bytes
};

std::vector<Case> cases() {
  std::vector<Case> out;
  std::ifstream in(test::testdata_path("expected/cases.json"));
  for (const auto& c : nlohmann::json::parse(in)) {
    const std::string model = c.at("model").get<std::string>();
    if (std::any_of(out.begin(), out.end(), [&](const Case& k) { return k.model == model; })) continue;
    if (c.at("outputs").size() != 1) continue;  // the models measured here have one output
    out.push_back({model, test::read_file(test::testdata_path(c.at("input").get<std::string>())),
                   test::read_file(test::testdata_path(c.at("outputs")[0].at("file").get<std::string>()))});
  }
  return out;
}

int max_abs_diff(std::span<const uint8_t> a, std::span<const uint8_t> b, bool is_signed) {
  int m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const int x = is_signed ? static_cast<int8_t>(a[i]) : a[i], y = is_signed ? static_cast<int8_t>(b[i]) : b[i];
    m = std::max(m, std::abs(x - y));
  }
  return m;
}

// Both engines on opt.threads threads (XNNPACK on its pthreadpool, the engine on its worker pool), each against its
// own single thread in pairs, after a warm-up that lets the engine's pool settle its per-operator and per-model
// choices. This part runs unpinned (the threads need the other cores), so its
// single-thread figures differ a little from the pinned ones above. Prints
//   bench cpu_MODEL_threadsK: T vs threads=1 T = R x                   (the engine's speed-up)
//   bench cpu_MODEL_threadsK_xnnpack: T vs XNNPACK threads=1 T = R x   (XNNPACK's speed-up on this machine)
//   bench cpu_MODEL_threadsK_vs_xnnpack: T vs XNNPACK threadsK T = R x
bool run_threads(const Case& c, const Graph& g, const std::vector<uint8_t>& bytes, SimdLevel level,
                 const Options& opt) {
  const std::string name = stem(c.model);
  cpu_set_t pinned, all;
  pthread_getaffinity_np(pthread_self(), sizeof pinned, &pinned);
  CPU_ZERO(&all);
  for (int i = 0; i < CPU_SETSIZE; ++i) CPU_SET(i, &all);
  sched_setaffinity(0, sizeof all, &all);  // the threads created below inherit this
  struct Restore {
    cpu_set_t set;
    ~Restore() { pthread_setaffinity_np(pthread_self(), sizeof set, &set); }
  } restore{pinned};
  std::unique_ptr<pthreadpool, void (*)(pthreadpool_t)> tp(pthreadpool_create(opt.threads), pthreadpool_destroy);
  if (!tp) {
    std::fprintf(stderr, "bench cpu_xnnpack: pthreadpool_create(%zu) failed\n", opt.threads);
    return false;
  }
  XnnNet x1, xk;
  if (const std::string why = x1.build(g, 0, g.operators.size()); !why.empty()) return false;
  if (const std::string why = xk.build(g, 0, g.operators.size(), tp.get()); !why.empty()) {
    std::printf("info cpu_%s_threads%zu_vs_xnnpack: not measured: %s\n", name.c_str(), opt.threads, why.c_str());
    return true;
  }
  for (XnnNet* n : {&x1, &xk}) {
    auto it = n->inputs().find(g.inputs[0]);
    if (!n->has_host_transpose() && it != n->inputs().end() && it->second.size == c.input.size())
      std::memcpy(it->second.data(), c.input.data(), c.input.size());
  }
  struct Engine {
    std::unique_ptr<KernelBackend> backend;
    std::unique_ptr<Interpreter> model;
    std::vector<engine::LayerTime> recycle;  // the last result, refilled by the next (as the server does)
  };
  Engine e[2];
  for (size_t k = 0; k < 2; ++k) {
    e[k].backend = make_optimized_kernel_backend(level, k == 0 ? 1 : opt.threads);
    InterpreterConfig config;
    config.arena_budget = uint64_t{1} << 30;
    config.primary = e[k].backend.get();
    auto loaded = Interpreter::load(bytes, config);
    if (!loaded) return false;
    e[k].model = std::move(loaded).value();
    std::memcpy(e[k].model->input(0).data(), c.input.data(), c.input.size());
  }
  engine::InvokeContext ctx;
  // 0, 1: the engine on 1 and K threads; 2, 3: XNNPACK on 1 and K threads.
  auto run = [&](size_t which) {
    const auto t0 = Clock::now();
    bool ok;
    if (which < 2) {
      ctx.recycle = &e[which].recycle;
      auto layers = e[which].model->invoke(*e[which].backend, nullptr, ctx);
      ok = static_cast<bool>(layers);
      if (ok) e[which].recycle = std::move(*layers);
    }
    else ok = (which == 2 ? x1 : xk).run(c.input);
    return ok ? std::chrono::duration<double, std::milli>(Clock::now() - t0).count() : -1.0;
  };
  // Two phases, each a pair on its own: the engine's 1 and K threads, then XNNPACK's. (Interleaving all four made
  // each pool's workers poll while the other library ran: pthreadpool's poll for a long while after every run, and
  // the engine's pool measured itself slower and chose the caller alone.)
  auto pairs = [&](size_t one, size_t many, std::vector<double>& t1, std::vector<double>& tk,
                   std::vector<double>& speedup) {
    for (int k = 0; k < 40; ++k) run(many), run(one);
    double total = 0;
    for (size_t round = 0; round < 20000; ++round) {
      const bool many_first = round % 2 == 0;
      const double a = run(many_first ? many : one), b = run(many_first ? one : many);
      const double rk = many_first ? a : b, r1 = many_first ? b : a;
      t1.push_back(r1);
      tk.push_back(rk);
      speedup.push_back(r1 / rk);
      total += a + b;
      if (static_cast<int>(round + 1) >= opt.min_runs && total >= opt.seconds * 1e3 / 2) break;
    }
  };
  std::vector<double> t[4], engine_speedup, xnn_speedup;
  pairs(0, 1, t[0], t[1], engine_speedup);
  const auto got = e[1].model->output(0);
  if (got.size() != c.want.size() || std::memcmp(got.data(), c.want.data(), got.size()) != 0) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: the engine's output on %zu threads differs from the reference bytes\n",
                 name.c_str(), opt.threads);
    return false;
  }
  pairs(2, 3, t[2], t[3], xnn_speedup);
  const double e1 = median(t[0]), ek = median(t[1]), x1m = median(t[2]), xkm = median(t[3]);
  const bool small = e1 < 1.0;
  const double scale = small ? 1e3 : 1.0;
  const std::string unit = small ? "us" : "ms";
  const std::string k = std::to_string(opt.threads);
  bench::report("cpu_" + name + "_threads" + k, ek * scale, unit, "threads=1", e1 * scale, unit,
                median(engine_speedup));
  bench::report("cpu_" + name + "_threads" + k + "_xnnpack", xkm * scale, unit, "XNNPACK threads=1", x1m * scale, unit,
                median(xnn_speedup));
  bench::report("cpu_" + name + "_threads" + k + "_vs_xnnpack", ek * scale, unit, "XNNPACK threads" + k, xkm * scale,
                unit, xkm / ek);
  std::printf("info cpu_%s_threads%s: unpinned, 40 warm-up pairs then %zu pairs of the engine, %zu of XNNPACK (the "
              "last line compares the two phases' medians); the engine's speed-up p10 %.3f p90 %.3f, XNNPACK's p10 "
              "%.3f p90 %.3f\n",
              name.c_str(), k.c_str(), engine_speedup.size(), xnn_speedup.size(),
              bench::percentile(engine_speedup, 0.1), bench::percentile(engine_speedup, 0.9),
              bench::percentile(xnn_speedup, 0.1), bench::percentile(xnn_speedup, 0.9));
  return true;
}

bool run_model(const Case& c, const Options& opt) {
  const std::string name = stem(c.model);
  const std::vector<uint8_t> bytes = test::read_file(test::testdata_path(c.model));
  auto graph = read_tflite_model(bytes);
  if (!graph) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: %s\n", name.c_str(), graph.error().what().c_str());
    return false;
  }
  const Graph& g = *graph;
  if (g.inputs.size() != 1 || g.outputs.size() != 1 || g.operators.empty()) return true;
  XnnNet net;
  if (const std::string why = net.build(g, 0, g.operators.size()); !why.empty()) {
    // Which operators XNNPACK refuses, each alone (a folded PAD goes with the operator it feeds).
    std::string refused;
    for (size_t i = 0; i < g.operators.size(); ++i) {
      const auto code = static_cast<BuiltinOp>(g.operators[i].code);
      if (code == BuiltinOp::pad || code == BuiltinOp::padv2) continue;
      const size_t first = i > 0 && static_cast<BuiltinOp>(g.operators[i - 1].code) == BuiltinOp::pad ? i - 1 : i;
      XnnNet one;
      if (const std::string w = one.build(g, first, i + 1); !w.empty())
        refused += " [" + std::to_string(i) + "] " + w + ";";
    }
    std::printf("info cpu_%s_vs_xnnpack: not measured: %s; alone:%s\n", name.c_str(), why.c_str(),
                refused.empty() ? " every operator builds" : refused.c_str());
    return true;
  }
  const int32_t first_input = g.inputs[0];
  if (!net.has_host_transpose()) {
    auto it = net.inputs().find(first_input);
    if (it == net.inputs().end() || it->second.size != c.input.size()) {
      std::printf("info cpu_%s_vs_xnnpack: not measured: the XNNPACK graph's input is not the model's\n",
                  name.c_str());
      return true;
    }
    std::memcpy(it->second.data(), c.input.data(), c.input.size());
  }

  // The engine, one thread, the chosen level.
  auto backend = make_optimized_kernel_backend(opt.simd.value_or(detect_simd_level()), 1);
  InterpreterConfig config;
  config.arena_budget = uint64_t{1} << 30;
  config.primary = backend.get();
  auto loaded = Interpreter::load(bytes, config);
  if (!loaded) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: %s\n", name.c_str(), loaded.error().what().c_str());
    return false;
  }
  Interpreter& engine = **loaded;
  if (engine.input(0).size() != c.input.size()) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: input size mismatch\n", name.c_str());
    return false;
  }
  std::memcpy(engine.input(0).data(), c.input.data(), c.input.size());
  engine::InvokeContext ctx;
  std::vector<engine::LayerTime> recycle;  // the last result, refilled by the next (as the server does)
  ctx.recycle = &recycle;
  std::vector<std::vector<double>> engine_layers(engine.operators().size());
  auto run_engine = [&](bool record) {
    const auto t0 = Clock::now();
    auto layers = engine.invoke(*backend, nullptr, ctx);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!layers) return -1.0;
    if (record)
      for (size_t i = 0; i < layers->size() && i < engine_layers.size(); ++i)
        engine_layers[i].push_back(static_cast<double>((*layers)[i].ns) / 1e6);
    recycle = std::move(*layers);
    return ms;
  };
  auto run_xnn = [&]() {
    const auto t0 = Clock::now();
    if (!net.run(c.input)) return -1.0;
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  if (run_engine(false) < 0 || run_xnn() < 0) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: an inference failed\n", name.c_str());
    return false;
  }
  const auto got = engine.output(0);
  if (got.size() != c.want.size() || std::memcmp(got.data(), c.want.data(), got.size()) != 0) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: the engine's output differs from the reference bytes\n",
                 name.c_str());
    return false;
  }
  const bool is_signed = g.tensors[static_cast<size_t>(g.outputs[0])].type == DType::int8;
  const auto xo = net.output();
  if (xo.size() != got.size()) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: XNNPACK's output has %zu bytes, the model's %zu\n", name.c_str(),
                 xo.size(), got.size());
    return false;
  }
  const int diff_ref = max_abs_diff(xo, c.want, is_signed), diff_engine = max_abs_diff(xo, got, is_signed);
  size_t differing = 0;
  double sum_diff = 0;
  auto val = [&](uint8_t v) { return is_signed ? static_cast<int>(static_cast<int8_t>(v)) : static_cast<int>(v); };
  size_t top_x = 0, top_r = 0;
  for (size_t i = 0; i < xo.size(); ++i) {
    differing += xo[i] != c.want[i];
    sum_diff += std::abs(val(xo[i]) - val(c.want[i]));
    if (val(xo[i]) > val(xo[top_x])) top_x = i;
    if (val(c.want[i]) > val(c.want[top_r])) top_r = i;
  }
  const double mean_diff = sum_diff / static_cast<double>(xo.size());
  std::printf("info cpu_%s_vs_xnnpack: XNNPACK output vs reference bytes: max |diff| %d LSB, mean %.2f LSB (%zu of "
              "%zu bytes differ; XNNPACK requantizes in float, so its rounding differs by 1 LSB here and there and "
              "that grows through the layers), top-1 index %zu vs %zu; vs the engine's output: max |diff| %d LSB; "
              "the engine's output equals the reference bytes\n",
              name.c_str(), diff_ref, mean_diff, differing, xo.size(), top_x, top_r, diff_engine);
  // A wrong translation (padding, layout, scales) gives tens of LSB everywhere and another class.
  if (mean_diff > 3.0 || (xo.size() > 2 && top_x != top_r && val(xo[top_r]) < val(xo[top_x]) - 2)) {
    std::fprintf(stderr, "bench cpu_xnnpack: %s: XNNPACK's output is too far from the reference: the translation "
                         "is wrong\n", name.c_str());
    return false;
  }

  // Interleaved rounds, the first runner alternating; paired ratio per round.
  std::vector<double> e_ms, x_ms, ratio;
  for (int k = 0; k < 3; ++k) run_engine(false), run_xnn();  // warm-up
  double total = 0;
  for (size_t round = 0; round < 20000; ++round) {
    double e, x;
    if (round % 2 == 0) {
      e = run_engine(true);
      x = run_xnn();
    } else {
      x = run_xnn();
      e = run_engine(true);
    }
    e_ms.push_back(e);
    x_ms.push_back(x);
    ratio.push_back(x / e);
    total += e + x;
    if (static_cast<int>(round + 1) >= opt.min_runs && total >= opt.seconds * 1e3) break;
  }
  const double e = median(e_ms), x = median(x_ms);
  const bool small = e < 1.0;
  const double scale = small ? 1e3 : 1.0;
  const std::string unit = small ? "us" : "ms";
  bench::report("cpu_" + name + "_vs_xnnpack", e * scale, unit, "XNNPACK", x * scale, unit, median(ratio));
  std::printf("info cpu_%s_vs_xnnpack: %zu paired rounds, engine %s; ratio (XNNPACK / engine) p10 %.3f p90 %.3f; "
              "engine/XNNPACK time %.3f (done-when: <= 0.8)\n",
              name.c_str(), ratio.size(), backend->description().c_str(), bench::percentile(ratio, 0.1),
              bench::percentile(ratio, 0.9), 1.0 / median(ratio));

  if (opt.threads > 1 && !run_threads(c, g, bytes, opt.simd.value_or(detect_simd_level()), opt)) return false;

  if (opt.layers) {
    // Each operator alone in XNNPACK, against the engine's per-operator time of the rounds above.
    for (size_t i = 0; i < g.operators.size() && i < engine.operators().size(); ++i) {
      const PreparedOp& pop = engine.operators()[i];
      const auto code = static_cast<BuiltinOp>(g.operators[i].code);
      if (pop.folded_into >= 0 || code == BuiltinOp::transpose || code == BuiltinOp::reshape) continue;
      // A conv fed by a folded PAD: the XNNPACK node gets the PAD too (so its padding is folded the same way).
      size_t first = i;
      if (i > 0 && engine.operators()[i - 1].folded_into == static_cast<int32_t>(i)) first = i - 1;
      XnnNet one;
      const std::string why = one.build(g, first, i + 1);
      double xt = 0;
      if (why.empty()) {
        for (auto& [t, buf] : one.inputs()) std::fill(buf.bytes.begin(), buf.bytes.end(), uint8_t{3});
        std::vector<double> t;
        for (int k = 0; k < std::max(9, opt.min_runs / 3); ++k) {
          const auto t0 = Clock::now();
          one.run({});
          t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        xt = median(t);
      }
      const double et = median(engine_layers[i]);
      const TensorSpec& out = g.tensors[static_cast<size_t>(g.operators[i].outputs[0])];
      std::string shape;
      for (int d = 0; d < out.shape.rank; ++d) shape += (d ? "x" : "") + std::to_string(out.shape[d]);
      const TensorSpec& in = g.tensors[static_cast<size_t>(g.operators[i].inputs[0])];
      std::printf("info cpu_%s layer %3zu %-18s in C %4d out %-14s engine %8.4f ms  XNNPACK %8.4f ms  %5.2f x%s%s\n",
                  name.c_str(), i, pop.op_name.c_str(), in.shape.rank ? in.shape[in.shape.rank - 1] : 0,
                  shape.c_str(), et, xt, et > 0 && xt > 0 ? xt / et : 0.0, why.empty() ? "" : "  ",
                  why.c_str());
    }
  }
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::string simd;
  CLI::App app{"The CPU engine against XNNPACK (Debian's libxnnpack-dev) on the shared test models: one thread each, "
               "pinned to the same core, interleaved rounds (tools/bench cpu)"};
  app.add_option("--model", opt.model_filter, "Only models whose file name contains this");
  app.add_option("--min-runs", opt.min_runs, "Rounds at least")->check(CLI::PositiveNumber);
  app.add_option("--seconds", opt.seconds, "Seconds per model at least")->check(CLI::NonNegativeNumber);
  app.add_flag("--layers", opt.layers, "Also time each operator alone in both");
  app.add_option("--simd", simd, "The engine's SIMD level (default: the best this processor runs)");
  app.add_option("--threads", opt.threads,
                 "Also run both on this many threads (unpinned), each against its own single thread")
      ->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  if (!simd.empty()) {
    opt.simd = parse_simd_level(simd);
    if (!opt.simd || !simd_level_unavailable_reason(*opt.simd).empty()) {
      std::fprintf(stderr, "bench_cpu_xnnpack: --simd %s: not a level this processor runs\n", simd.c_str());
      return 2;
    }
  }
  if (!test::testdata_dir()) {
    std::fprintf(stderr, "bench cpu_xnnpack: test data not found at %s (set AISRV_TESTDATA)\n",
                 test::testdata_candidate().c_str());
    return 1;
  }
  // One thread for both, pinned to the core this process starts on.
  const int cpu = sched_getcpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu < 0 ? 0 : cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    std::fprintf(stderr, "bench cpu_xnnpack: could not pin to CPU %d; measuring unpinned\n", cpu);
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "bench cpu_xnnpack: xnn_initialize failed (this processor is not supported)\n");
    return 1;
  }
  std::printf("info cpu_vs_xnnpack: both on one thread pinned to CPU %d; XNNPACK from Debian's libxnnpack-dev\n", cpu);
  bool ok = true;
  for (const Case& c : cases()) {
    if (!opt.model_filter.empty() && c.model.find(opt.model_filter) == std::string::npos) continue;
    ok = run_model(c, opt) && ok;
  }
  xnn_deinitialize();
  return ok ? 0 : 1;
}
