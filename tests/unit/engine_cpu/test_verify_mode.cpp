// aisrv tests — verify mode (TIDL-style reference comparison): with a backend that corrupts one kernel, the
// inference fails with infer_error at the first operator whose output differs, and the debug log names the
// operator index, type, element and both values; any pair of backends can be compared, in either role, and the
// optimised backend (with its prepared data) verifies against ref in both roles.
#include <doctest/doctest.h>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "corrupting_backend.hpp"
#include "optimized_backend.hpp"
#include "test_models.hpp"

using namespace aisrv;
using namespace aisrv::engine;
using engine::cpu::CpuBackend;
using engine::cpu::ReferenceKernelBackend;
using test::CorruptingBackend;

namespace {

struct Run {
  Result<std::vector<LayerTime>> result;
  std::vector<std::string> log;
};

Run run(std::unique_ptr<engine::cpu::KernelBackend> primary, std::unique_ptr<engine::cpu::KernelBackend> checker) {
  CpuBackend b({}, std::move(primary), std::move(checker));
  REQUIRE(b.load(test::small_net_model(), {}).ok());
  auto in = b.input(0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(static_cast<int8_t>(i * 5 % 60 - 30));
  Run r{make_error(Errc::internal, "not run"), {}};
  InvokeContext ctx;
  ctx.log = [&](std::string_view l) { r.log.emplace_back(l); };
  r.result = b.invoke(ctx);
  return r;
}

// The optimised backend with a fault in its load-time data: the first packed CONV_2D weight pair is altered.
class PoisonedPreparation : public engine::cpu::OptimizedKernelBackend {
 public:
  PoisonedPreparation() : OptimizedKernelBackend(engine::cpu::detect_simd_level()) {}
  void prepare(const engine::cpu::OpParams& op, std::span<uint8_t> prepared) const override {
    OptimizedKernelBackend::prepare(op, prepared);
    if (std::holds_alternative<engine::cpu::Conv2DParams>(op) && prepared.size() > 70)
      prepared[engine::cpu::opt::kPreparedHeaderBytes] ^= 0x11;
  }
};

}  // namespace

TEST_CASE("verify mode with the optimised backend: opt checked by ref and ref checked by opt agree") {
  auto a = run(engine::cpu::make_kernel_backend("opt"), std::make_unique<ReferenceKernelBackend>());
  CHECK(a.result.ok());
  CHECK(a.log.empty());
  // opt as the checker: it runs with its own prepared data, not the primary's (ref has none).
  auto b = run(std::make_unique<ReferenceKernelBackend>(), engine::cpu::make_kernel_backend("opt"));
  CHECK(b.result.ok());
  CHECK(b.log.empty());
}

TEST_CASE("verify mode catches a fault in the optimised backend's prepared data") {
  auto r = run(std::make_unique<PoisonedPreparation>(), std::make_unique<ReferenceKernelBackend>());
  REQUIRE_FALSE(r.result.ok());
  CHECK(r.result.error().code == Errc::infer_error);
  REQUIRE(r.log.size() == 1);
  CHECK(r.log[0].find("operator 0 (CONV_2D, output 'conv0')") != std::string::npos);
  CHECK(r.log[0].find("with kernels=opt") != std::string::npos);
  // Without verify mode the same fault goes unnoticed.
  CHECK(run(std::make_unique<PoisonedPreparation>(), nullptr).result.ok());
}

TEST_CASE("verify mode passes when the backends agree") {
  auto r = run(std::make_unique<ReferenceKernelBackend>(), std::make_unique<ReferenceKernelBackend>());
  CHECK(r.result.ok());
  CHECK(r.log.empty());
}

TEST_CASE("verify mode stops at the first differing operator and names it") {
  // DEPTHWISE_CONV_2D is operator 1; CONV_2D operators 0 and 2 are computed correctly.
  auto r = run(std::make_unique<CorruptingBackend>(CorruptingBackend::Target::depthwise_conv2d, 17),
               std::make_unique<ReferenceKernelBackend>());
  REQUIRE_FALSE(r.result.ok());
  CHECK(r.result.error().code == Errc::infer_error);
  REQUIRE(r.log.size() == 1);
  const std::string& line = r.log[0];
  INFO(line);
  CHECK(line.find("operator 1 (DEPTHWISE_CONV_2D, output 'dw1')") != std::string::npos);
  CHECK(line.find("element 17 of 72") != std::string::npos);
  CHECK(line.find("with kernels=corrupt") != std::string::npos);
  CHECK(line.find("with kernels=ref") != std::string::npos);
  CHECK(r.result.error().message.rfind(
            "verify: operator 1 (DEPTHWISE_CONV_2D) differs from kernels=ref at element 17 (", 0) == 0);
}

TEST_CASE("the first operator is caught, and the roles can be swapped") {
  auto r = run(std::make_unique<CorruptingBackend>(CorruptingBackend::Target::conv2d, 0),
               std::make_unique<ReferenceKernelBackend>());
  REQUIRE_FALSE(r.result.ok());
  REQUIRE(r.log.size() == 1);
  CHECK(r.log[0].find("operator 0 (CONV_2D, output 'conv0')") != std::string::npos);
  CHECK(r.log[0].find("element 0 of 72") != std::string::npos);
  auto swapped = run(std::make_unique<ReferenceKernelBackend>(),
                     std::make_unique<CorruptingBackend>(CorruptingBackend::Target::conv2d, 3));
  REQUIRE_FALSE(swapped.result.ok());
  REQUIRE(swapped.log.size() == 1);
  CHECK(swapped.log[0].find("operator 0 (CONV_2D") != std::string::npos);
  CHECK(swapped.log[0].find("element 3 of 72") != std::string::npos);
}

TEST_CASE("without verify mode the corruption goes unnoticed (the check is what catches it)") {
  auto r = run(std::make_unique<CorruptingBackend>(CorruptingBackend::Target::depthwise_conv2d, 17), nullptr);
  CHECK(r.result.ok());
}
