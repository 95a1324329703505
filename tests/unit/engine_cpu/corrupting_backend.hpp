// aisrv tests — a test-only KernelBackend: the reference kernels, except that one kernel adds 1 to one element of
// its output. Used to prove that verify mode finds and reports the first differing operator.
#pragma once

#include <string_view>

#include "aisrv/engine/cpu/kernel_backend.hpp"

namespace aisrv::test {

class CorruptingBackend : public engine::cpu::ReferenceKernelBackend {
 public:
  enum class Target { conv2d, depthwise_conv2d };
  CorruptingBackend(Target target, size_t element) : target_(target), element_(element) {}

  std::string_view name() const override { return "corrupt"; }
  void conv2d(const engine::cpu::Conv2DParams& p) override {
    ReferenceKernelBackend::conv2d(p);
    if (target_ == Target::conv2d) static_cast<int8_t*>(p.output)[element_] += 1;
  }
  void depthwise_conv2d(const engine::cpu::DepthwiseConv2DParams& p) override {
    ReferenceKernelBackend::depthwise_conv2d(p);
    if (target_ == Target::depthwise_conv2d) static_cast<int8_t*>(p.output)[element_] += 1;
  }

 private:
  Target target_;
  size_t element_;
};

}  // namespace aisrv::test
