// aisrv CPU engine — the kernel backend interface (in the spirit of ember-infer-core's backend table): the invoke
// phase of every operator is one method taking its prepared parameter struct (kernel_params.hpp). The interpreter
// owns graph, arena and parameters; a backend only computes.
//
// Backends in this build:
//   ReferenceKernelBackend  — plain, obviously correct C++, bit-exact with TensorFlow Lite (Micro) reference kernels
//   OptimizedKernelBackend  — "opt": packed int16 GEMM / vectorised kernels, SIMD chosen at run time, bit-exact with
//                             the reference (optimized_backend.hpp, kernels/opt/)
// A new backend usually derives from ReferenceKernelBackend and overrides the kernels it speeds up, so every
// operator always has an implementation. Methods are called from one thread at a time. Kernels whose work depends on
// run-time values that can be out of range (indices of GATHER / GATHER_ND, integer divisors) return a Result and
// fail the inference with Errc::infer_error instead of reading or dividing out of bounds.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "aisrv/engine/cpu/kernel_params.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::cpu {

class KernelBackend {
 public:
  virtual ~KernelBackend() = default;

  // Short name as used in `kernels=NAME` ("ref", "opt").
  virtual std::string_view name() const = 0;
  // For the load log: the name plus what was chosen at run time, e.g. "opt (avx2)".
  virtual std::string description() const { return std::string(name()); }

  // Bytes of scratch memory the backend needs for one call with these parameters (shapes and quantization are
  // set; data pointers are not yet). Asked once per operator at load; the arena planner reserves the memory for
  // the duration of that operator and passes it in `scratch`.
  virtual size_t scratch_bytes(const OpParams& op) const { return 0; }

  // Data the backend derives once from an operator's constant operands (e.g. weights repacked for a GEMM), kept for
  // the lifetime of the model. `prepared_bytes` is asked once per operator at load (shapes, quantization and the
  // constant data pointers are set); `prepare` then fills exactly that many bytes, after the model is bound. The
  // interpreter places the bytes in the arena (they count against the budget) and passes them to every call of
  // this backend in the parameter struct's `prepared` (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED).
  virtual size_t prepared_bytes(const OpParams& op) const { return 0; }
  virtual void prepare(const OpParams& op, std::span<uint8_t> prepared) const {}

  // Whether a model run with this backend has each PAD that only feeds a VALID convolution folded into it at load
  // (pad_folding.hpp): the convolution pads as it reads and the PAD does not run. The reference backend keeps the
  // model's operators one for one, as TensorFlow Lite Micro runs them.
  virtual bool folds_pads() const { return false; }

  // Around one whole inference of `model` (Interpreter::invoke): a backend may decide per model how it runs — the
  // optimised one whether its worker threads pay for this model at all, from measured inference times.
  virtual void begin_invoke(const void* model) {}
  virtual void end_invoke(bool completed) {}
  // Before each operator of that inference runs, its index in the model: a backend may keep per-operator choices
  // (the optimised one whether handing an operator's parts to its workers pays, from measured times).
  virtual void begin_operator(size_t index) {}

  virtual void conv2d(const Conv2DParams& p) = 0;
  virtual void depthwise_conv2d(const DepthwiseConv2DParams& p) = 0;
  virtual void fully_connected(const FullyConnectedParams& p) = 0;
  virtual void average_pool2d(const AveragePool2DParams& p) = 0;
  virtual void add(const AddParams& p) = 0;
  virtual void softmax(const SoftmaxParams& p) = 0;
  virtual void copy(const CopyParams& p) = 0;
  virtual void mean(const MeanParams& p) = 0;
  virtual void pad(const PadParams& p) = 0;
  virtual void transpose(const TransposeParams& p) = 0;
  virtual void quantize(const QuantizeParams& p) = 0;
  virtual void dequantize(const DequantizeParams& p) = 0;
  virtual void concatenation(const ConcatenationParams& p) = 0;
  virtual void lstm(const LstmParams& p) = 0;
  virtual void unary(const UnaryParams& p) = 0;
  virtual Result<void> binary(const BinaryParams& p) = 0;
  virtual void cast(const CastParams& p) = 0;
  virtual void strided_slice(const StridedSliceParams& p) = 0;
  virtual void split(const SplitParams& p) = 0;
  virtual Result<void> gather(const GatherParams& p) = 0;
  virtual Result<void> gather_nd(const GatherNdParams& p) = 0;
  virtual void space_depth(const SpaceDepthParams& p) = 0;
  virtual void pool2d(const Pool2DParams& p) = 0;
  virtual void resize(const ResizeParams& p) = 0;
  virtual void reduce(const ReduceParams& p) = 0;
  virtual void arg_min_max(const ArgMinMaxParams& p) = 0;
  virtual void l2_normalization(const L2NormParams& p) = 0;
  virtual void transpose_conv(const TransposeConvParams& p) = 0;
  virtual void detection_postprocess(const DetectionPostProcessParams& p) = 0;
};

// Calls the method of `backend` that matches the alternative held by `op`; the error of a kernel that fails.
Result<void> run_kernel(KernelBackend& backend, const OpParams& op);

// The reference backend.
class ReferenceKernelBackend : public KernelBackend {
 public:
  std::string_view name() const override { return "ref"; }
  size_t scratch_bytes(const OpParams& op) const override;

  void conv2d(const Conv2DParams& p) override;
  void depthwise_conv2d(const DepthwiseConv2DParams& p) override;
  void fully_connected(const FullyConnectedParams& p) override;
  void average_pool2d(const AveragePool2DParams& p) override;
  void add(const AddParams& p) override;
  void softmax(const SoftmaxParams& p) override;
  void copy(const CopyParams& p) override;
  void mean(const MeanParams& p) override;
  void pad(const PadParams& p) override;
  void transpose(const TransposeParams& p) override;
  void quantize(const QuantizeParams& p) override;
  void dequantize(const DequantizeParams& p) override;
  void concatenation(const ConcatenationParams& p) override;
  void lstm(const LstmParams& p) override;
  void unary(const UnaryParams& p) override;
  Result<void> binary(const BinaryParams& p) override;
  void cast(const CastParams& p) override;
  void strided_slice(const StridedSliceParams& p) override;
  void split(const SplitParams& p) override;
  Result<void> gather(const GatherParams& p) override;
  Result<void> gather_nd(const GatherNdParams& p) override;
  void space_depth(const SpaceDepthParams& p) override;
  void pool2d(const Pool2DParams& p) override;
  void resize(const ResizeParams& p) override;
  void reduce(const ReduceParams& p) override;
  void arg_min_max(const ArgMinMaxParams& p) override;
  void l2_normalization(const L2NormParams& p) override;
  void transpose_conv(const TransposeConvParams& p) override;
  void detection_postprocess(const DetectionPostProcessParams& p) override;
};

// The kernel backends this build can construct by name: "ref" and "opt" (the optimised backend at the best
// instruction-set level of this processor, its parallel kernels on `threads` threads; "ref" is single-threaded).
// Returns null for any other name.
std::unique_ptr<KernelBackend> make_kernel_backend(std::string_view name, size_t threads = 1);

}  // namespace aisrv::engine::cpu
