// aisrv CPU engine, optimised kernels — the backend class (internal to kernels/opt): the reference backend with
// the kernels that matter overridden (profile of the test models: CONV_2D and DEPTHWISE_CONV_2D take > 95 % of the
// reference time, then PAD, ADD, TRANSPOSE, MEAN, FULLY_CONNECTED; the LSTM models are their LSTM, then QUANTIZE and
// SOFTMAX). One file per kernel driver; the inner loops come from an OptKernels table filled for the instruction-set
// level chosen at construction (opt_kernels.hpp).
#pragma once

#include <memory>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "opt_kernels.hpp"
#include "worker_pool.hpp"

namespace aisrv::engine::cpu {

namespace opt {
// Where a participant's last range of output rows of a DEPTHWISE_CONV_2D invocation ended: a range of the same
// invocation that starts there continues with the input rows already converted in the participant's scratch; any
// other range (the first one, a row taken from another participant's range) starts with an empty row cache.
// Invocation numbers are never reused, so nothing left from an earlier operator or inference can be taken for
// current.
struct alignas(64) RowCursor {
  uint64_t invocation = 0;
  size_t next = 0;
  bool resumes(uint64_t inv, size_t first) const { return invocation == inv && next == first; }
  void stop(uint64_t inv, size_t end) {
    invocation = inv;
    next = end;
  }
};
}  // namespace opt

class OptimizedKernelBackend : public ReferenceKernelBackend {
 public:
  // `threads` participants run CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (the caller and threads - 1 workers
  // started here); each gets its own scratch, so scratch needs grow with it.
  // `min_parallel_work`: operators with fewer multiply-accumulates run on the caller alone; above it the pool
  // decides per operator shape from measured times (worker_pool.hpp). Tests pass 0: every operator is handed out.
  explicit OptimizedKernelBackend(SimdLevel level, size_t threads = 1,
                                  uint64_t min_parallel_work = opt::WorkerPool::kMinParallelWork);

  std::string_view name() const override { return "opt"; }
  bool folds_pads() const override { return true; }
  std::string description() const override;
  SimdLevel level() const { return level_; }
  size_t threads() const { return pool_.capacity(); }
  void begin_invoke(const void* model) override { pool_.begin_inference(model); }
  void end_invoke(bool completed) override { pool_.end_inference(completed); }
  void begin_operator(size_t index) override { pool_.begin_operator(index); }

  size_t scratch_bytes(const OpParams& op) const override;
  size_t prepared_bytes(const OpParams& op) const override;
  void prepare(const OpParams& op, std::span<uint8_t> prepared) const override;

  void conv2d(const Conv2DParams& p) override;
  void depthwise_conv2d(const DepthwiseConv2DParams& p) override;
  void fully_connected(const FullyConnectedParams& p) override;
  void add(const AddParams& p) override;
  void mean(const MeanParams& p) override;
  void pad(const PadParams& p) override;
  void transpose(const TransposeParams& p) override;
  void lstm(const LstmParams& p) override;
  void softmax(const SoftmaxParams& p) override;
  void average_pool2d(const AveragePool2DParams& p) override;
  void quantize(const QuantizeParams& p) override;
  void unary(const UnaryParams& p) override;
  Result<void> binary(const BinaryParams& p) override;
  void concatenation(const ConcatenationParams& p) override;
  void strided_slice(const StridedSliceParams& p) override;
  void pool2d(const Pool2DParams& p) override;
  void resize(const ResizeParams& p) override;
  void transpose_conv(const TransposeConvParams& p) override;

 private:
  SimdLevel level_;
  opt::OptKernels kernels_;
  opt::WorkerPool pool_;
  // DEPTHWISE_CONV_2D hands out single output rows; each participant's cursor lets its next row of the same
  // invocation keep the input rows it converted (depthwise_conv_2d.cpp). Written by its participant only.
  std::unique_ptr<opt::RowCursor[]> row_cursors_;
  uint64_t row_invocations_ = 0;  // caller's thread only
};

// Per-kernel sizing and preparation (conv_2d.cpp, depthwise_conv_2d.cpp, fully_connected.cpp).
namespace opt {
// Levels that include the AVX2 kernels (the VNNI levels add to them), and the NEON ones.
inline bool uses_avx2(SimdLevel l) {
  return l == SimdLevel::avx2 || l == SimdLevel::avx_vnni || l == SimdLevel::avx512_vnni;
}
inline bool uses_neon(SimdLevel l) { return l == SimdLevel::neon || l == SimdLevel::neon_dot; }
// The weight layout a CONV_2D is prepared in with kernel table `k` (at load; it reads the weights): for int8
// convolutions GemmLayout::dot when the table has the dot-product GEMM, else GemmLayout::pairs8 when it has that GEMM,
// the depth is at least kPairs8MinDepth and no weight is -128; otherwise the table's gemm_layout. At invoke the
// layout is read back from the prepared header and checked with conv2d_runs.
GemmLayout conv2d_layout(const Conv2DParams& p, const OptKernels& k);
// Whether table `k` runs a CONV_2D prepared in `layout`.
bool conv2d_runs(GemmLayout layout, const Conv2DParams& p, const OptKernels& k);
// Shallower int8 convolutions keep the int16 layout on the NEON level: at a depth of 16 or 24 the pairwise GEMM's
// per-output reduction (and, for 24, the padding to 32) outweighs its cheaper multiply-accumulates (mobilenet_v2,
// measured in instructions: thresholds 16 and 17 cost 3-4 M more than 25, 48 cost 0.4 M more).
inline constexpr int64_t kPairs8MinDepth = 25;
size_t conv2d_scratch_bytes(const Conv2DParams& p, size_t participants, GemmLayout layout);
size_t conv2d_prepared_bytes(const Conv2DParams& p, GemmLayout layout);
void conv2d_prepare(const Conv2DParams& p, GemmLayout layout, std::span<uint8_t> prepared);
size_t depthwise_scratch_bytes(const DepthwiseConv2DParams& p, size_t participants);
size_t depthwise_prepared_bytes(const DepthwiseConv2DParams& p);
void depthwise_prepare(const DepthwiseConv2DParams& p, DepthwiseLayout layout, std::span<uint8_t> prepared);
size_t fully_connected_scratch_bytes(const FullyConnectedParams& p);
// FULLY_CONNECTED int8 / uint8 on the VNNI levels: weights packed at load (FcVnniRow); 0 bytes without fc_vnni.
size_t fully_connected_prepared_bytes(const FullyConnectedParams& p, const OptKernels& k);
void fully_connected_prepare(const FullyConnectedParams& p, std::span<uint8_t> prepared);
size_t softmax_prepared_bytes(const SoftmaxParams& p);
size_t average_pool_scratch_bytes(const AveragePool2DParams& p);
size_t quantize_prepared_bytes(const QuantizeParams& p);
void quantize_prepare(const QuantizeParams& p, std::span<uint8_t> prepared);
void softmax_prepare(const SoftmaxParams& p, std::span<uint8_t> prepared);
size_t lstm_scratch_bytes(const LstmParams& p);
size_t lstm_prepared_bytes(const LstmParams& p);
void lstm_prepare(const LstmParams& p, std::span<uint8_t> prepared);
// Runs the optimised LSTM; false (nothing written) when the prepared data or scratch is not usable.
bool lstm_run(const LstmParams& p, const OptKernels& k);
// Element-wise operators of 8-bit types as a 256-entry table made at load (unary.cpp).
size_t unary_prepared_bytes(const UnaryParams& p);
void unary_prepare(const UnaryParams& p, std::span<uint8_t> prepared);
// Whether the optimised kernel runs for these parameters, else the reference kernel does (unary.cpp: a usable prepared
// table; binary.cpp, pool_2d.cpp, resize.cpp); the tests check that the fast path really runs.
bool unary_fast_path(const UnaryParams& p);
bool binary_fast_path(const BinaryParams& p);
bool max_pool_fast_path(const Pool2DParams& p);
bool resize_fast_path(const ResizeParams& p);
// TRANSPOSE_CONV (transpose_conv.cpp): scratch per participant and weights repacked at load.
size_t transpose_conv_scratch_bytes(const TransposeConvParams& p, size_t participants);
size_t transpose_conv_prepared_bytes(const TransposeConvParams& p);
void transpose_conv_prepare(const TransposeConvParams& p, std::span<uint8_t> prepared);

// True when every (multiplier, shift) pair meets the vector requantization's preconditions: multiplier >= 0,
// shift in [-31, 30] (the loader guarantees both; the drivers re-check at prepare time and otherwise run the
// reference kernel).
bool requantization_in_range(const std::vector<int32_t>& multiplier, const std::vector<int32_t>& shift);

// Header at the start of every prepared block.
struct PreparedHeader {
  uint32_t magic = 0;   // kPreparedMagic once filled
  uint32_t usable = 0;  // 1: the optimised kernel may run; 0: use the reference kernel
  uint32_t layout = 0;  // GemmLayout / DepthwiseLayout of the weights (a backend uses only data in its own layout)
};
inline constexpr uint32_t kPreparedMagic = 0x4F505431;  // "OPT1"
inline constexpr size_t kPreparedHeaderBytes = 64;       // keeps what follows 64-byte aligned
// Largest scratch or prepared block a kernel asks for; beyond it (only a hostile shape gets there) the operator runs
// on the reference kernel, so no size computation can overflow. The arena budget bounds real allocations anyway.
inline constexpr long double kMaxKernelBytes = 1ULL << 40;
}  // namespace opt

}  // namespace aisrv::engine::cpu
