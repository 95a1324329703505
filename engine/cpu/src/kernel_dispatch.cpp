// aisrv CPU engine — dispatch of a prepared operator to the matching KernelBackend method, and the accessors the
// verify mode uses to run a second backend into a separate buffer with its own load-time data.
#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::engine::cpu {

namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

void run_kernel(KernelBackend& b, const OpParams& op) {
  std::visit(Overloaded{
                 [&](const Conv2DParams& p) { b.conv2d(p); },
                 [&](const DepthwiseConv2DParams& p) { b.depthwise_conv2d(p); },
                 [&](const FullyConnectedParams& p) { b.fully_connected(p); },
                 [&](const AveragePool2DParams& p) { b.average_pool2d(p); },
                 [&](const AddParams& p) { b.add(p); },
                 [&](const SoftmaxParams& p) { b.softmax(p); },
                 [&](const CopyParams& p) { b.copy(p); },
                 [&](const MeanParams& p) { b.mean(p); },
                 [&](const PadParams& p) { b.pad(p); },
                 [&](const TransposeParams& p) { b.transpose(p); },
                 [&](const QuantizeParams& p) { b.quantize(p); },
                 [&](const DequantizeParams& p) { b.dequantize(p); },
                 [&](const ConcatenationParams& p) { b.concatenation(p); },
                 [&](const LstmParams& p) { b.lstm(p); },
             },
             op);
}

void* output_of(const OpParams& op) {
  return std::visit([](const auto& p) -> void* { return p.output; }, op);
}

OpParams with_output(const OpParams& op, void* output) {
  OpParams copy = op;
  std::visit(Overloaded{
                 [&](DequantizeParams& p) { p.output = static_cast<float*>(output); },
                 [&](LstmParams& p) { p.output = static_cast<int8_t*>(output); },
                 [&](auto& p) { p.output = output; },
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
