// aisrv CPU engine — dispatch of a prepared operator to the matching KernelBackend method, and the accessors the
// verify mode uses to run a second backend into a separate buffer with its own load-time data.
#include "aisrv/engine/cpu/kernel_backend.hpp"

#include <type_traits>

namespace aisrv::engine::cpu {

namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// The status of a kernel call: a method that cannot fail (void) succeeds; others return their Result.
template <typename Call>
Result<void> finish(Call&& call) {
  if constexpr (std::is_void_v<decltype(call())>) {
    call();
    return {};
  } else {
    return call();
  }
}

}  // namespace

Result<void> run_kernel(KernelBackend& b, const OpParams& op) {
  return std::visit(Overloaded{
                        [&](const Conv2DParams& p) { return finish([&] { return b.conv2d(p); }); },
                        [&](const DepthwiseConv2DParams& p) { return finish([&] { return b.depthwise_conv2d(p); }); },
                        [&](const FullyConnectedParams& p) { return finish([&] { return b.fully_connected(p); }); },
                        [&](const AveragePool2DParams& p) { return finish([&] { return b.average_pool2d(p); }); },
                        [&](const AddParams& p) { return finish([&] { return b.add(p); }); },
                        [&](const SoftmaxParams& p) { return finish([&] { return b.softmax(p); }); },
                        [&](const CopyParams& p) { return finish([&] { return b.copy(p); }); },
                        [&](const MeanParams& p) { return finish([&] { return b.mean(p); }); },
                        [&](const PadParams& p) { return finish([&] { return b.pad(p); }); },
                        [&](const TransposeParams& p) { return finish([&] { return b.transpose(p); }); },
                        [&](const QuantizeParams& p) { return finish([&] { return b.quantize(p); }); },
                        [&](const DequantizeParams& p) { return finish([&] { return b.dequantize(p); }); },
                        [&](const ConcatenationParams& p) { return finish([&] { return b.concatenation(p); }); },
                        [&](const LstmParams& p) { return finish([&] { return b.lstm(p); }); },
                        [&](const UnaryParams& p) { return finish([&] { return b.unary(p); }); },
                        [&](const BinaryParams& p) { return finish([&] { return b.binary(p); }); },
                        [&](const CastParams& p) { return finish([&] { return b.cast(p); }); },
                        [&](const StridedSliceParams& p) { return finish([&] { return b.strided_slice(p); }); },
                        [&](const SplitParams& p) { return finish([&] { return b.split(p); }); },
                        [&](const GatherParams& p) { return finish([&] { return b.gather(p); }); },
                        [&](const GatherNdParams& p) { return finish([&] { return b.gather_nd(p); }); },
                        [&](const SpaceDepthParams& p) { return finish([&] { return b.space_depth(p); }); },
                        [&](const Pool2DParams& p) { return finish([&] { return b.pool2d(p); }); },
                        [&](const ResizeParams& p) { return finish([&] { return b.resize(p); }); },
                        [&](const ReduceParams& p) { return finish([&] { return b.reduce(p); }); },
                        [&](const ArgMinMaxParams& p) { return finish([&] { return b.arg_min_max(p); }); },
                        [&](const L2NormParams& p) { return finish([&] { return b.l2_normalization(p); }); },
                        [&](const TransposeConvParams& p) { return finish([&] { return b.transpose_conv(p); }); },
                        [&](const DetectionPostProcessParams& p) { return finish([&] { return b.detection_postprocess(p); }); },
                    },
                    op);
}

std::vector<void*> outputs_of(const OpParams& op) {
  return std::visit(
      [](const auto& p) -> std::vector<void*> {
        if constexpr (requires { p.outputs; }) return p.outputs;
        else return {static_cast<void*>(p.output)};
      },
      op);
}

OpParams with_outputs(const OpParams& op, std::span<void* const> outputs) {
  OpParams copy = op;
  std::visit(
      [&](auto& p) {
        if constexpr (requires { p.outputs; }) {
          p.outputs.assign(outputs.begin(), outputs.end());
        } else {
          using Out = decltype(p.output);
          p.output = static_cast<Out>(outputs.empty() ? nullptr : outputs[0]);
        }
      },
      copy);
  return copy;
}

void set_prepared(OpParams& op, std::span<const uint8_t> prepared) {
  std::visit(
      [&](auto& p) {
        if constexpr (requires { p.prepared; }) p.prepared = prepared;
      },
      op);
}

}  // namespace aisrv::engine::cpu
