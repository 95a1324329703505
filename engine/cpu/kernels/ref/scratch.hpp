// aisrv CPU engine, reference kernels — the scratch memory each reference kernel needs for one call (asked once
// per operator at load; the arena planner reserves it for that operator's duration). One function per parameter
// struct, defined beside its kernel; 0 when the kernel needs none.
#pragma once

#include <cstddef>

#include "aisrv/engine/cpu/kernel_params.hpp"

namespace aisrv::engine::cpu::ref {

size_t scratch_bytes(const Conv2DParams& p);             // conv_2d.cpp (dynamic-range models)
size_t scratch_bytes(const DepthwiseConv2DParams& p);    // depthwise_conv_2d.cpp (dynamic-range models)
size_t scratch_bytes(const FullyConnectedParams& p);     // fully_connected.cpp (dynamic-range models)
size_t scratch_bytes(const UnaryParams& p);              // unary.cpp
size_t scratch_bytes(const BinaryParams& p);             // binary.cpp
size_t scratch_bytes(const StridedSliceParams& p);       // strided_slice.cpp
size_t scratch_bytes(const GatherParams& p);             // gather.cpp
size_t scratch_bytes(const Pool2DParams& p);             // pool_2d.cpp
size_t scratch_bytes(const ResizeParams& p);             // resize.cpp
size_t scratch_bytes(const ReduceParams& p);             // reduce.cpp
size_t scratch_bytes(const L2NormParams& p);             // l2_normalization.cpp
size_t scratch_bytes(const TransposeConvParams& p);      // transpose_conv.cpp
size_t scratch_bytes(const DetectionPostProcessParams& p);  // detection_postprocess.cpp

}  // namespace aisrv::engine::cpu::ref
