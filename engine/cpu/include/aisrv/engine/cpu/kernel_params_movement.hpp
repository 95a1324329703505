// aisrv CPU engine — kernel parameter structs: data movement (RESHAPE-like copies, PAD, TRANSPOSE, CONCATENATION
// and PACK, STRIDED_SLICE and SLICE, SPLIT, SPLIT_V and UNPACK, GATHER, GATHER_ND, DEPTH_TO_SPACE, SPACE_TO_DEPTH).
// Included by kernel_params.hpp (which states the conventions every struct follows); not meant to be included alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace aisrv::engine::cpu {

// RESHAPE (and any other operator that only relabels the shape): a byte copy.
struct CopyParams {
  const void* input = nullptr;
  void* output = nullptr;
  size_t bytes = 0;
  std::span<uint8_t> scratch;
};

// PAD / PADV2: any element type, padded with one element value.
struct PadParams {
  size_t element_size = 1;
  Shape input_shape, output_shape;  // same rank
  std::array<int32_t, kMaxRank> before{}, after{};
  std::array<uint8_t, 8> pad_value{};  // element_size bytes
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// TRANSPOSE: output dimension i is input dimension perm[i].
struct TransposeParams {
  size_t element_size = 1;
  Shape input_shape, output_shape;
  std::array<int32_t, kMaxRank> perm{};
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// CONCATENATION along one axis. Quantized inputs whose scale/zero point differ from the output's are rescaled
// (TFLite's reference rescale in float); others are copied.
struct ConcatenationParams {
  DType dtype = DType::int8;
  size_t element_size = 1;
  int64_t outer_size = 0;   // product of the dimensions before the axis
  int64_t inner_size = 0;   // product of the dimensions after the axis
  struct Input {
    const void* data = nullptr;
    int32_t axis_size = 0;
    bool rescale = false;
    float scale = 1.0f;      // input scale (quantized types)
    int32_t zero_point = 0;
  };
  std::vector<Input> inputs;
  void* output = nullptr;
  float output_scale = 1.0f;
  int32_t output_zero_point = 0;
  std::span<uint8_t> scratch;
};

// STRIDED_SLICE and SLICE, resolved at load into a start, a stop and a step per dimension of the input (masks,
// ellipsis, new and shrunk axes applied; the output holds the selected elements in order). Fields are filled by
// ops/strided_slice.cpp.
struct StridedSliceParams {
  size_t element_size = 1;
  Shape input_shape;  // rank kMaxRank (leading 1s)
  std::array<int32_t, kMaxRank> start{}, stop{}, step{};
  int64_t output_elements = 0;
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// SPLIT, SPLIT_V and UNPACK: the input cut along one axis into consecutive pieces, one per output.
struct SplitParams {
  size_t element_size = 1;
  int64_t outer_size = 0;  // product of the dimensions before the axis
  int64_t inner_size = 0;  // product of the dimensions after the axis
  int32_t axis_size = 0;   // of the input
  const void* input = nullptr;
  std::vector<int32_t> sizes;  // per output, along the axis
  std::vector<void*> outputs;
  std::span<uint8_t> scratch;
};

// GATHER: slices of the input along `axis` picked by a run-time index tensor (int32 or int64). An index outside
// [0, axis_size) fails the inference (as in TensorFlow Lite). Fields are filled by ops/gather.cpp.
struct GatherParams {
  size_t element_size = 1;
  DType index_type = DType::int32;
  int64_t batch_size = 0, outer_size = 0, inner_size = 0, index_count = 0;
  int32_t axis_size = 0;
  const void* input = nullptr;
  const void* indices = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// GATHER_ND: slices of the input picked by run-time index tuples (int32 or int64); an index outside the input fails
// the inference. Fields are filled by ops/gather_nd.cpp.
struct GatherNdParams {
  size_t element_size = 1;
  DType index_type = DType::int32;
  Shape input_shape;
  int32_t index_depth = 0;     // entries per index tuple
  int64_t tuple_count = 0;     // index tuples
  int64_t slice_elements = 0;  // elements copied per tuple
  const void* input = nullptr;
  const void* indices = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

// DEPTH_TO_SPACE and SPACE_TO_DEPTH (NHWC, any element type).
struct SpaceDepthParams {
  bool to_space = true;  // DEPTH_TO_SPACE; false: SPACE_TO_DEPTH
  size_t element_size = 1;
  int32_t block_size = 1;
  Dims4 input_shape, output_shape;
  const void* input = nullptr;
  void* output = nullptr;
  std::span<uint8_t> scratch;
};

}  // namespace aisrv::engine::cpu
