// aisrv benchmarks — one model, one kernel set, N inferences: the program `tools/bench cpu --arch arm64` runs under
// qemu-aarch64 with the instruction-counting plugin (tools/qemu-plugin/insn_count.c). Two runs with different N
// give the instructions of one inference as their difference / (N2 - N1), free of loading and start-up. The output
// of the first inference is compared with the expected bytes (a kernel set that computes something else has no
// figure worth printing).
//
//   bench_cpu_insns --model PATH --input PATH [--expected PATH] --kernels ref|portable|neon|neon_dot|avx2 [--runs N]
//                   [--per-op]
// --per-op: after the inferences, runs every operator once more on its own, bracketed by the plugin's marker system
// call (0x7A15, argument = operator index), and prints "op INDEX TYPE" for each, so that the plugin's "mark" lines
// give instructions per operator.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aisrv/engine/cpu/kernel_backend.hpp"
#include "aisrv/engine/cpu/optimized_backend.hpp"
#include "interpreter.hpp"
#include "testdata.hpp"

using namespace aisrv;
using namespace aisrv::engine::cpu;

int main(int argc, char** argv) {
  std::string model_path, input_path, expected_path, kernels;
  int runs = 1;
  bool per_op = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_cpu_insns: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") model_path = value();
    else if (a == "--input") input_path = value();
    else if (a == "--expected") expected_path = value();
    else if (a == "--kernels") kernels = value();
    else if (a == "--runs") runs = std::stoi(value());
    else if (a == "--per-op") per_op = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_cpu_insns --model PATH --input PATH [--expected PATH] --kernels "
                   "ref|portable|neon|neon_dot|avx2 [--runs N]\n");
      return 2;
    }
  }
  std::unique_ptr<KernelBackend> backend;
  if (kernels == "ref") backend = make_kernel_backend("ref");
  for (SimdLevel level : available_simd_levels())
    if (kernels == simd_level_name(level)) backend = make_optimized_kernel_backend(level);
  if (!backend || model_path.empty() || input_path.empty() || runs < 1) {
    std::fprintf(stderr, "bench_cpu_insns: need --model, --input, --runs >= 1 and --kernels naming ref or a level this "
                         "processor runs\n");
    return 2;
  }
  const auto model = test::read_file(model_path);
  const auto input = test::read_file(input_path);
  InterpreterConfig config;
  config.arena_budget = uint64_t{1} << 30;
  config.primary = backend.get();
  auto loaded = Interpreter::load(model, config);
  if (!loaded) {
    std::fprintf(stderr, "bench_cpu_insns: %s: %s\n", model_path.c_str(), loaded.error().what().c_str());
    return 1;
  }
  auto& it = **loaded;
  auto in = it.input(0);
  if (in.size() != input.size()) {
    std::fprintf(stderr, "bench_cpu_insns: the input is %zu bytes, the model wants %zu\n", input.size(), in.size());
    return 1;
  }
  std::memcpy(in.data(), input.data(), input.size());
  engine::InvokeContext ctx;
  for (int r = 0; r < runs; ++r) {
    auto done = it.invoke(*backend, nullptr, ctx);
    if (!done) {
      std::fprintf(stderr, "bench_cpu_insns: inference failed: %s\n", done.error().what().c_str());
      return 1;
    }
    if (r == 0 && !expected_path.empty()) {
      const auto want = test::read_file(expected_path);
      const auto got = it.output(0);
      if (got.size() != want.size() || std::memcmp(got.data(), want.data(), want.size()) != 0) {
        std::fprintf(stderr, "bench_cpu_insns: kernels=%s: output differs from %s\n", kernels.c_str(),
                     expected_path.c_str());
        return 1;
      }
    }
  }
  if (per_op) {
    constexpr long kMarker = 0x7A15;  // tools/qemu-plugin/insn_count.c
    for (size_t i = 0; i < it.operators().size(); ++i) {
      const PreparedOp& op = it.operators()[i];
      std::printf("op %zu %s\n", i, op.op_name.c_str());
      syscall(kMarker, i);
      if (op.folded_into < 0 && !run_kernel(*backend, op.params).ok()) return 1;  // a folded PAD does not run
      syscall(kMarker, i);
    }
  }
  std::printf("%s: %d inferences with %s\n", model_path.c_str(), runs, backend->description().c_str());
  return 0;
}
