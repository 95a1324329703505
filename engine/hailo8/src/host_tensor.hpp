// aisrv hailo8 — one model tensor as the user sees it and as HailoRT exchanges it. Without float I/O the two
// are the same bytes: the vstream's host frame in its device type (UINT8/UINT16; FLOAT32 for NMS outputs). With
// float I/O (engine option float=in|out|both) a quantized tensor is FLOAT32 for the user and our transforms convert
// it: inputs are quantized with the HEF's qp (transform::quantize: clip, divide, add zero point, round half to even)
// into the UINT8/UINT16 frame HailoRT gets; outputs are dequantized from the frame HailoRT returns (per tensor, or
// per feature on the innermost axis), NHW argmax outputs only cast. NMS outputs are FLOAT32 already (HailoRT decodes
// them) and stay as they are.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aisrv/engine/backend.hpp"
#include "aisrv/engine/hailo8/hef/types.hpp"
#include "aisrv/engine/hailo8/runtime/configured_network.hpp"
#include "aisrv/protocol/result.hpp"

namespace aisrv::engine::hailo8 {

class HostTensor {
 public:
  enum class Conversion { none, quantize, dequantize, cast };

  // A tensor of the vstream `v` (host side of the HEF), float32 for the user when `as_float` and `v` is quantized.
  // Errc::model_error for a frame the protocol cannot describe or quantization that is not finite;
  // Errc::not_supported for float I/O the transforms cannot do for this vstream (host orders other than NHWC, NHCW,
  // FCR, F8CR, NC, NHW; per-feature outputs not in a features-innermost order; an input qp that cannot quantize).
  static Result<HostTensor> input(const hef::VStreamInfo& v, bool as_float);
  static Result<HostTensor> output(const hef::VStreamInfo& v, bool as_float);
  // Before anything is allocated: Errc::model_error when the frame or the user tensor of `v` would be larger than
  // `max_bytes` (the HEF's shapes are hostile input: an edited edge layer may describe gigabytes).
  static Status check_size(const hef::VStreamInfo& v, bool as_float, uint64_t max_bytes);

  const TensorDesc& desc() const { return desc_; }
  // What libhailort must agree to: the vstream's name, device type and frame size.
  const runtime::TensorSpec& spec() const { return spec_; }
  Conversion conversion() const { return conversion_; }

  std::span<uint8_t> user();  // desc().bytes bytes: what SET/GET_*_TENSOR see
  std::span<const uint8_t> user() const;
  std::span<uint8_t> frame();  // spec().frame_size bytes: what HailoRT reads or writes
  std::span<const uint8_t> frame() const;

  // Inputs: the user's floats → the frame (quantize); a no-op without conversion.
  Status to_frame();
  // Outputs: the frame → the user's floats (dequantize or cast); a no-op without conversion.
  Status from_frame();
  // Zeroes the user buffer and the frame (outputs after a failed inference).
  void clear();

 private:
  HostTensor() = default;
  static Result<HostTensor> make(const hef::VStreamInfo& v, bool is_input, bool as_float);

  TensorDesc desc_;
  runtime::TensorSpec spec_;
  Conversion conversion_ = Conversion::none;
  hef::FormatType frame_type_ = hef::FormatType::uint8;
  std::vector<hef::QuantInfo> qps_;  // quantize: one; dequantize: one per tensor or one per feature
  std::vector<uint8_t> bytes_;       // without conversion: user buffer and frame; uint8 frame with conversion
  std::vector<uint16_t> frame16_;    // uint16 frame with conversion
  std::vector<float> values_;        // float user buffer with conversion
};

}  // namespace aisrv::engine::hailo8
