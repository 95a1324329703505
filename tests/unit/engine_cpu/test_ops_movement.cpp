// aisrv tests — the data-movement operators of the CPU engine, each as a one-operator model run on every backend
// (run_everywhere): STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, PACK, SQUEEZE, EXPAND_DIMS, GATHER, GATHER_ND,
// DEPTH_TO_SPACE and SPACE_TO_DEPTH, on every element type. Expected outputs come from index walks written here
// independently of the engine (numpy's indexing rules with Python's slice clamping, the TensorFlow definitions of
// the operators, element by element) or from hand-written tables; malformed operands must be refused at load and
// out-of-range run-time indices must fail the inference. At the end, the optimised CONCATENATION (PACK) and
// STRIDED_SLICE (SLICE) kernels against the reference ones, directly and through whole models.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "op_test_util.hpp"
#include "optimized_backend.hpp"

namespace {

using namespace aisrv;
using namespace aisrv::test;
namespace cpu = aisrv::engine::cpu;
using Dims = std::vector<int32_t>;

constexpr DType kAllTypes[] = {DType::int8,  DType::uint8,   DType::int16,  DType::int32,
                               DType::int64, DType::float32, DType::boolean};

// ---- element values and index walks ----

int64_t element_count(const Dims& shape) {
  int64_t n = 1;
  for (int32_t d : shape) n *= d;
  return n;
}

// The bytes of value number `i` of a test tensor of `type` (distinct for every type but bool over the small
// shapes used here; int8 / uint8 values are distinct over any 256 consecutive numbers).
Bytes element_bytes(DType type, int64_t i) {
  const auto put = [](auto v) {
    Bytes b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    return b;
  };
  switch (type) {
    case DType::int8: return put(static_cast<int8_t>(static_cast<uint8_t>(i * 7 + 3)));
    case DType::uint8: return put(static_cast<uint8_t>(i * 7 + 3));
    case DType::int16: return put(static_cast<int16_t>(i * 3 - 1000));
    case DType::int32: return put(static_cast<int32_t>(i * 101 - 50000));
    case DType::int64: return put(static_cast<int64_t>(i * 10000000019LL - 7));
    case DType::float32: return put(static_cast<float>(i) * 0.25f - 7.0f);
    case DType::boolean: return put(static_cast<uint8_t>((i * i + i / 3) % 3 == 0));
    default: FAIL("no test values for this type"); return {};
  }
}

// A test input of `n` elements, values first, first + 1, ...
Bytes input_of(DType type, int64_t n, int64_t first = 0) {
  Bytes b;
  for (int64_t i = 0; i < n; ++i) {
    const Bytes e = element_bytes(type, first + i);
    b.insert(b.end(), e.begin(), e.end());
  }
  return b;
}

// The elements `picks` (flat indices) of `input`, in that order.
Bytes pick(const Bytes& input, DType type, const std::vector<int64_t>& picks) {
  const size_t es = protocol::dtype_size(type);
  Bytes out;
  for (int64_t p : picks) {
    REQUIRE(static_cast<size_t>(p + 1) * es <= input.size());
    out.insert(out.end(), input.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(p) * es),
               input.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(p + 1) * es));
  }
  return out;
}

// Calls f(coordinates) for every element of `shape`, in row-major order.
template <typename F>
void for_each_index(const Dims& shape, F&& f) {
  if (element_count(shape) == 0) return;
  std::vector<int64_t> at(shape.size(), 0);
  for (;;) {
    f(at);
    size_t d = shape.size();
    for (;;) {
      if (d == 0) return;
      --d;
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
}

int64_t flat_index(const Dims& shape, const std::vector<int64_t>& at) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + at[d];
  return f;
}

// int8 / uint8 / int16 data tensors are quantized (as the models that move such data), the others plain.
int32_t data_tensor(tw::ModelBuilder& b, const std::string& name, DType type, Dims shape) {
  if (type == DType::int8) return activation(b, name.c_str(), type, std::move(shape), q(0.5f, -3));
  if (type == DType::uint8) return activation(b, name.c_str(), type, std::move(shape), q(0.25f, 130));
  if (type == DType::int16) return activation(b, name.c_str(), type, std::move(shape), q(0.125f, 0));
  return plain_tensor(b, name.c_str(), type, std::move(shape));
}

// A load that must be refused, with `what` in the message.
void check_refused(const Bytes& model, const std::string& what) {
  const std::string error = load_error(model);
  CHECK_MESSAGE(error.find(what) != std::string::npos, "load error '" << error << "' lacks '" << what << "'");
}

std::string dims_text(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// ---- STRIDED_SLICE ----

struct SliceSpec {
  std::vector<int32_t> begin, end, strides;
  cpu::StridedSliceOptions options;
};

Bytes strided_slice_model(DType type, const Dims& in_shape, const SliceSpec& s, const Dims& out_shape,
                          DType index_type = DType::int32) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  const auto n = static_cast<int32_t>(s.begin.size());
  const auto constant = [&](const char* name, const std::vector<int32_t>& v, int32_t count) {
    if (index_type == DType::int64)
      return b.add_constant<int64_t>(name, DType::int64, {count}, std::vector<int64_t>(v.begin(), v.end()));
    return b.add_constant<int32_t>(name, DType::int32, {count}, v);
  };
  const int32_t bg = constant("begin", s.begin, n);
  const int32_t en = constant("end", s.end, static_cast<int32_t>(s.end.size()));
  const int32_t st = constant("strides", s.strides, static_cast<int32_t>(s.strides.size()));
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::strided_slice, {in, bg, en, st}, {out}, s.options);
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish();
}

// Python's slice(start, stop, step).indices(n) followed by range(): the visited indices of one dimension.
std::vector<int64_t> python_slice(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step) {
  const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  const auto adjust = [&](int64_t v) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
  const int64_t a = start ? adjust(*start) : (step > 0 ? 0 : n - 1);
  const int64_t z = stop ? adjust(*stop) : (step > 0 ? n : -1);
  std::vector<int64_t> r;
  for (int64_t i = a; step > 0 ? i < z : i > z; i += step) r.push_back(i);
  return r;
}

// numpy's basic indexing x[spec] with the masks read as TensorFlow defines them: an ellipsis bit makes the entry
// `...`, a new-axis bit `np.newaxis`, a shrink bit an integer index, a begin / end mask bit an omitted bound.
// TFLite's readings where numpy would raise: a shrunk index below -size takes element 0, a begin mask on a shrunk
// dimension takes element 0. `refused` when the engine must refuse (shrunk index past the end, shrink with a
// negative stride).
struct Walk {
  Dims out_shape;
  std::vector<int64_t> picks;
  bool refused = false;
};

Walk numpy_walk(const Dims& shape, const SliceSpec& s) {
  const auto bit = [](int32_t mask, size_t k) { return ((mask >> k) & 1) != 0; };
  const auto& o = s.options;
  size_t consuming = 0;
  for (size_t k = 0; k < s.begin.size(); ++k)
    if (!bit(o.ellipsis_mask, k) && !bit(o.new_axis_mask, k)) ++consuming;
  REQUIRE(consuming <= shape.size());
  Walk w;
  std::vector<std::vector<int64_t>> visit;  // per input dimension
  const auto take_whole = [&] {
    std::vector<int64_t> all;
    for (int64_t i = 0; i < shape[visit.size()]; ++i) all.push_back(i);
    w.out_shape.push_back(shape[visit.size()]);
    visit.push_back(all);
  };
  for (size_t k = 0; k < s.begin.size(); ++k) {
    if (bit(o.ellipsis_mask, k)) {
      for (size_t e = 0; e < shape.size() - consuming; ++e) take_whole();
    } else if (bit(o.new_axis_mask, k)) {
      w.out_shape.push_back(1);
    } else if (bit(o.shrink_axis_mask, k)) {
      const int64_t n = shape[visit.size()];
      int64_t i = bit(o.begin_mask, k) ? 0 : s.begin[k];
      if (i < 0) i += n;
      if (i >= n || s.strides[k] < 0) w.refused = true;
      visit.push_back({std::max<int64_t>(i, 0)});
    } else {
      const int64_t n = shape[visit.size()];
      const auto start = bit(o.begin_mask, k) ? std::nullopt : std::optional<int64_t>(s.begin[k]);
      const auto stop = bit(o.end_mask, k) ? std::nullopt : std::optional<int64_t>(s.end[k]);
      visit.push_back(python_slice(n, start, stop, s.strides[k]));
      w.out_shape.push_back(static_cast<int32_t>(visit.back().size()));
    }
  }
  while (visit.size() < shape.size()) take_whole();
  Dims counts;
  for (const auto& v : visit) counts.push_back(static_cast<int32_t>(v.size()));
  for_each_index(counts, [&](const std::vector<int64_t>& at) {
    std::vector<int64_t> coords(at.size());
    for (size_t d = 0; d < at.size(); ++d) coords[d] = visit[d][static_cast<size_t>(at[d])];
    w.picks.push_back(flat_index(shape, coords));
  });
  return w;
}

// Runs STRIDED_SLICE against the numpy walk: the engine must give exactly the walk's elements, or refuse when the
// walk says so or the slice is empty (a model cannot declare an empty output). True when the slice ran.
bool check_strided_slice(DType type, const Dims& shape, const SliceSpec& s) {
  const Walk w = numpy_walk(shape, s);
  const bool empty = std::count(w.out_shape.begin(), w.out_shape.end(), 0) > 0;
  if (w.refused || empty) {
    Dims declared = w.out_shape;
    for (int32_t& d : declared) d = std::max(d, 1);
    check_refused(strided_slice_model(type, shape, s, declared), w.refused ? "shrunk" : "has shape");
    return false;
  }
  const Bytes input = input_of(type, element_count(shape));
  const auto got = run_everywhere(strided_slice_model(type, shape, s, w.out_shape), {input});
  REQUIRE(got.size() == 1);
  CHECK(got[0] == pick(input, type, w.picks));
  return true;
}

TEST_CASE("STRIDED_SLICE: YOLOv8 channel halves with begin/end masks (int8, 4-D and 3-D)") {
  // [1,160,160,32] -> 16 of the 32 channels, with YOLOv8's begin_mask 7 / end_mask 7 (upper half) and
  // begin_mask 15 / end_mask 7 (lower half).
  const Dims shape{1, 160, 160, 32};
  const Bytes input = input_of(DType::int8, element_count(shape));
  struct Half {
    int32_t begin_mask, end_mask, begin, end, first_channel;
  };
  for (const Half& h : {Half{7, 7, 16, 32, 16}, Half{15, 7, 5, 16, 0}}) {
    SliceSpec s{{0, 0, 0, h.begin}, {0, 0, 0, h.end}, {1, 1, 1, 1}, {}};
    s.options.begin_mask = h.begin_mask;
    s.options.end_mask = h.end_mask;
    const auto got = run_everywhere(strided_slice_model(DType::int8, shape, s, {1, 160, 160, 16}), {input});
    std::vector<int64_t> want;
    for (int64_t pixel = 0; pixel < 160 * 160; ++pixel)
      for (int64_t c = h.first_channel; c < h.first_channel + 16; ++c) want.push_back(pixel * 32 + c);
    CHECK(got[0] == pick(input, DType::int8, want));
  }
  // [1,144,8400] -> channels 64..143 (begin_mask 5, end_mask 5).
  const Dims shape3{1, 144, 8400};
  const Bytes input3 = input_of(DType::int8, element_count(shape3));
  SliceSpec s{{0, 64, 0}, {0, 144, 0}, {1, 1, 1}, {}};
  s.options.begin_mask = 5;
  s.options.end_mask = 5;
  const auto got = run_everywhere(strided_slice_model(DType::int8, shape3, s, {1, 80, 8400}), {input3});
  std::vector<int64_t> want;
  for (int64_t c = 64; c < 144; ++c)
    for (int64_t x = 0; x < 8400; ++x) want.push_back(c * 8400 + x);
  CHECK(got[0] == pick(input3, DType::int8, want));
}

TEST_CASE("STRIDED_SLICE: hand-written tables") {
  // A 10-element int32 input; v({i, j, ...}) are its elements i, j, ... in that order.
  const auto v = [](std::initializer_list<int64_t> picks) {
    return pick(input_of(DType::int32, 10), DType::int32, std::vector<int64_t>(picks));
  };
  const auto run = [&](const SliceSpec& s, const Dims& out) {
    return run_everywhere(strided_slice_model(DType::int32, {10}, s, out), {input_of(DType::int32, 10)})[0];
  };
  CHECK(run({{2}, {7}, {2}, {}}, {3}) == v({2, 4, 6}));
  CHECK(run({{-1}, {-11}, {-3}, {}}, {4}) == v({9, 6, 3, 0}));    // end clamps to -1 going backward
  CHECK(run({{-100}, {100}, {4}, {}}, {3}) == v({0, 4, 8}));      // both bounds clamp
  CHECK(run({{8}, {2}, {-1}, {}}, {6}) == v({8, 7, 6, 5, 4, 3}));
  SliceSpec shrink{{-2}, {0}, {1}, {}};
  shrink.options.shrink_axis_mask = 1;
  CHECK(run(shrink, {}) == v({8}));  // a scalar output
  SliceSpec shrink_low{{-20}, {0}, {1}, {}};
  shrink_low.options.shrink_axis_mask = 1;
  CHECK(run(shrink_low, {}) == v({0}));  // TFLite clamps an index below -size to 0
  // offset = true: end is counted from the resolved begin.
  SliceSpec off{{1}, {3}, {1}, {}};
  off.options.offset = true;
  CHECK(run(off, {3}) == v({1, 2, 3}));
  off.begin = {-4};  // begin 6, end 6 + 3
  CHECK(run(off, {3}) == v({6, 7, 8}));
  off.begin = {0};
  off.end = {10};
  off.strides = {3};
  CHECK(run(off, {4}) == v({0, 3, 6, 9}));
  off.begin = {9};
  off.end = {-4};  // end 5 going backward
  off.strides = {-2};
  CHECK(run(off, {2}) == v({9, 7}));
  off.begin = {8};
  off.end = {5};  // end 13 clamps to 10
  off.strides = {1};
  CHECK(run(off, {2}) == v({8, 9}));
}

TEST_CASE("STRIDED_SLICE: ellipsis, new axes and short specifications (hand-written)") {
  const Dims shape{2, 3, 4};
  const Bytes input = input_of(DType::int16, 24);
  const auto at = [](int64_t i, int64_t j, int64_t k) { return (i * 3 + j) * 4 + k; };
  {  // x[..., 1:3]
    SliceSpec s{{0, 1}, {0, 3}, {1, 1}, {}};
    s.options.ellipsis_mask = 1;
    const auto got = run_everywhere(strided_slice_model(DType::int16, shape, s, {2, 3, 2}), {input});
    std::vector<int64_t> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 1; k < 3; ++k) want.push_back(at(i, j, k));
    CHECK(got[0] == pick(input, DType::int16, want));
  }
  {  // x[1, np.newaxis, ..., ::-2]
    SliceSpec s{{1, 0, 0, 0}, {0, 0, 0, 0}, {1, 1, 1, -2}, {}};
    s.options.shrink_axis_mask = 1;
    s.options.new_axis_mask = 2;
    s.options.ellipsis_mask = 4;
    s.options.begin_mask = 8;
    s.options.end_mask = 8;
    const auto got = run_everywhere(strided_slice_model(DType::int16, shape, s, {1, 3, 2}), {input});
    std::vector<int64_t> want;
    for (int j = 0; j < 3; ++j)
      for (int k : {3, 1}) want.push_back(at(1, j, k));
    CHECK(got[0] == pick(input, DType::int16, want));
  }
  {  // x[1:2] with one specification: the remaining dimensions are taken whole
    SliceSpec s{{1}, {2}, {1}, {}};
    const auto got = run_everywhere(strided_slice_model(DType::int16, shape, s, {1, 3, 4}), {input});
    std::vector<int64_t> want;
    for (int64_t e = 12; e < 24; ++e) want.push_back(e);
    CHECK(got[0] == pick(input, DType::int16, want));
  }
  {  // ellipsis and new axis on the same entry: the ellipsis wins
    SliceSpec s{{0, 2}, {0, 4}, {1, 1}, {}};
    s.options.ellipsis_mask = 1;
    s.options.new_axis_mask = 1;
    const auto got = run_everywhere(strided_slice_model(DType::int16, shape, s, {2, 3, 2}), {input});
    std::vector<int64_t> want;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 2; k < 4; ++k) want.push_back(at(i, j, k));
    CHECK(got[0] == pick(input, DType::int16, want));
  }
  {  // TFLite's ellipsis always stands for at least one dimension (numpy's would stand for none here): with
     // x[..., 0:1, 1:2, 2:3] on 3 dimensions it takes dimension 0 whole, the next two entries slice dimensions 1
     // and 2, the last entry is ignored.
    SliceSpec s{{0, 0, 1, 2}, {0, 1, 2, 3}, {1, 1, 1, 1}, {}};
    s.options.ellipsis_mask = 1;
    const auto got = run_everywhere(strided_slice_model(DType::int16, shape, s, {2, 1, 1}), {input});
    CHECK(got[0] == pick(input, DType::int16, {at(0, 0, 1), at(1, 0, 1)}));
  }
  {  // rank 6, every dimension reversed or strided
    const Dims big{2, 1, 3, 1, 2, 3};
    const Bytes in6 = input_of(DType::float32, element_count(big));
    SliceSpec s{{-1, 0, 2, 0, 1, 0}, {-3, 1, -4, 1, -3, 3}, {-1, 1, -2, 1, -1, 2}, {}};
    check_strided_slice(DType::float32, big, s);
    const auto got = run_everywhere(strided_slice_model(DType::float32, big, s, {2, 1, 2, 1, 2, 2}), {in6});
    std::vector<int64_t> want;
    for (int a : {1, 0})
      for (int c : {2, 0})
        for (int e : {1, 0})
          for (int f : {0, 2}) want.push_back(((((a * 1 + 0) * 3 + c) * 1 + 0) * 2 + e) * 3 + f);
    CHECK(got[0] == pick(in6, DType::float32, want));
  }
}

TEST_CASE("STRIDED_SLICE: every begin/end mask combination, forward and backward, every type") {
  const Dims shape{3, 4, 5};
  const std::vector<SliceSpec> bases{{{1, -3, 0}, {-1, 4, 5}, {1, 2, 3}, {}},
                                     {{2, -1, 4}, {0, -5, -6}, {-1, -2, -1}, {}},
                                     {{-2, 7, 1}, {3, -9, 4}, {2, -1, 1}, {}},
                                     {{2, 1, 3}, {1, 3, 2}, {1, -1, 1}, {}}};  // empty unless masked
  int n = 0, ran = 0;
  for (const SliceSpec& base : bases)
    for (int32_t bm = 0; bm < 8; ++bm)
      for (int32_t em = 0; em < 8; ++em) {
        SliceSpec s = base;
        s.options.begin_mask = bm;
        s.options.end_mask = em;
        CAPTURE(bm);
        CAPTURE(em);
        ran += check_strided_slice(kAllTypes[static_cast<size_t>(n++) % std::size(kAllTypes)], shape, s);
      }
  MESSAGE("mask combinations: ", ran, " ran, ", n - ran, " refused");
}

TEST_CASE("STRIDED_SLICE: random specifications against numpy's indexing (fixed seed)") {
  std::mt19937 rng(20240611);
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0, ran = 0;
  while (checked < 400) {
    const int rank = uniform(1, 4);
    Dims shape;
    for (int d = 0; d < rank; ++d) shape.push_back(uniform(1, 4));
    const int specs = uniform(1, rank + 2);
    const int ellipsis = uniform(0, 2) == 0 ? uniform(0, specs - 1) : -1;
    SliceSpec s;
    int consuming = 0, new_axes = 0;
    for (int k = 0; k < specs; ++k) {
      s.begin.push_back(uniform(-6, 6));
      s.end.push_back(uniform(-6, 6));
      const int stride_pick = uniform(0, 7);
      s.strides.push_back(stride_pick < 3 ? stride_pick - 3 : stride_pick < 6 ? stride_pick - 2 : 1);
      if (k == ellipsis) {
        s.options.ellipsis_mask |= 1 << k;
        if (uniform(0, 3) == 0) s.options.new_axis_mask |= 1 << k;  // ignored under an ellipsis
        continue;
      }
      const int kind = uniform(0, 9);
      if (kind == 0) {
        s.options.new_axis_mask |= 1 << k;
        ++new_axes;
        if (uniform(0, 1)) s.options.shrink_axis_mask |= 1 << k;  // ignored on a new axis
        continue;
      }
      ++consuming;
      if (kind <= 2) s.options.shrink_axis_mask |= 1 << k;
      if (uniform(0, 2) == 0) s.options.begin_mask |= 1 << k;
      if (uniform(0, 2) == 0) s.options.end_mask |= 1 << k;
    }
    // Stay where numpy and TFLite agree: the specification names at most the input's dimensions (fewer than all
    // of them when an ellipsis stands for the rest), at most 6 dimensions in all.
    if (consuming > rank || (ellipsis >= 0 && consuming == rank) || rank + new_axes > 6) continue;
    CAPTURE(dims_text(shape));
    CAPTURE(dims_text(s.begin));
    CAPTURE(dims_text(s.end));
    CAPTURE(dims_text(s.strides));
    CAPTURE(s.options.begin_mask);
    CAPTURE(s.options.end_mask);
    CAPTURE(s.options.ellipsis_mask);
    CAPTURE(s.options.new_axis_mask);
    CAPTURE(s.options.shrink_axis_mask);
    ran += check_strided_slice(kAllTypes[static_cast<size_t>(checked) % std::size(kAllTypes)], shape, s);
    ++checked;
  }
  MESSAGE("random specifications: ", ran, " ran, ", checked - ran, " refused");
}

TEST_CASE("STRIDED_SLICE: malformed operands are refused") {
  const Dims shape{2, 3};
  const SliceSpec ok{{0, 0}, {2, 3}, {1, 1}, {}};
  CHECK(load_error(strided_slice_model(DType::int8, shape, ok, {2, 3})).empty());
  check_refused(strided_slice_model(DType::int8, shape, ok, {2, 2}), "has shape [2,2]");
  check_refused(strided_slice_model(DType::int8, shape, ok, {2, 3}, DType::int64), "begin");
  check_refused(strided_slice_model(DType::int8, shape, {{0, 0}, {2, 3}, {1, 0}, {}}, {2, 3}), "stride 0");
  check_refused(strided_slice_model(DType::int8, shape, {{0, 0}, {2, 3, 1}, {1, 1}, {}}, {2, 3}), "as many");
  check_refused(strided_slice_model(DType::int8, shape, {{0, 0}, {2, 3}, {1}, {}}, {2, 3}), "as many");
  SliceSpec s = ok;
  s.options.ellipsis_mask = 3;
  check_refused(strided_slice_model(DType::int8, shape, s, {2, 3}), "more than one ellipsis");
  s = ok;
  s.options.new_axis_mask = 4;  // beyond the two specifications
  check_refused(strided_slice_model(DType::int8, shape, s, {2, 3}), "beyond");
  s = ok;
  s.options.shrink_axis_mask = 1;
  s.begin = {2, 0};  // index 2 of a dimension of 2
  check_refused(strided_slice_model(DType::int8, shape, s, {3}), "outside");
  s.begin = {1, 0};
  s.strides = {-1, 1};
  check_refused(strided_slice_model(DType::int8, shape, s, {3}), "positive stride");
  s = ok;
  s.begin = {1, 0};
  s.end = {1, 3};  // empty
  check_refused(strided_slice_model(DType::int8, shape, s, {1, 3}), "has shape");
  s = SliceSpec{{0, 0, 0}, {1, 1, 1}, {1, 1, 1}, {}};
  s.options.new_axis_mask = 4;  // two slices and a new axis for one input dimension
  check_refused(strided_slice_model(DType::int8, {2}, s, {1, 1, 1}), "do not describe");
  s = SliceSpec{std::vector<int32_t>(33, 0), std::vector<int32_t>(33, 1), std::vector<int32_t>(33, 1), {}};
  check_refused(strided_slice_model(DType::int8, shape, s, {1, 1}), "at most 32");
  {  // rank 6 plus a new axis
    SliceSpec s6{{0}, {1}, {1}, {}};
    s6.options.new_axis_mask = 1;
    check_refused(strided_slice_model(DType::int8, {1, 1, 1, 1, 1, 2}, s6, {1, 1, 1, 1, 1, 2}), "rank");
  }
  {  // run-time begin
    tw::ModelBuilder b;
    const int32_t in = data_tensor(b, "input", DType::int8, shape);
    const int32_t bg = plain_tensor(b, "begin", DType::int32, {2});
    const int32_t en = b.add_constant<int32_t>("end", DType::int32, {2}, {2, 3});
    const int32_t st = b.add_constant<int32_t>("strides", DType::int32, {2}, {1, 1});
    const int32_t out = data_tensor(b, "output", DType::int8, shape);
    b.add_operator(tw::Op::strided_slice, {in, bg, en, st}, {out}, cpu::StridedSliceOptions{});
    b.set_inputs({in, bg});
    b.set_outputs({out});
    check_refused(b.finish(), "computed at run time");
  }
  {  // input and output types differ
    tw::ModelBuilder b;
    const int32_t in = data_tensor(b, "input", DType::int8, shape);
    const int32_t bg = b.add_constant<int32_t>("begin", DType::int32, {2}, {0, 0});
    const int32_t en = b.add_constant<int32_t>("end", DType::int32, {2}, {2, 3});
    const int32_t st = b.add_constant<int32_t>("strides", DType::int32, {2}, {1, 1});
    const int32_t out = data_tensor(b, "output", DType::uint8, shape);
    b.add_operator(tw::Op::strided_slice, {in, bg, en, st}, {out}, cpu::StridedSliceOptions{});
    b.set_inputs({in});
    b.set_outputs({out});
    check_refused(b.finish(), "input and output");
  }
}

// ---- SLICE ----

template <typename I>
Bytes slice_model(DType type, const Dims& in_shape, const std::vector<I>& begin, const std::vector<I>& size,
                  const Dims& out_shape) {
  tw::ModelBuilder b;
  const DType it = sizeof(I) == 8 ? DType::int64 : DType::int32;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  const int32_t bg = b.add_constant<I>("begin", it, {static_cast<int32_t>(begin.size())}, begin);
  const int32_t sz = b.add_constant<I>("size", it, {static_cast<int32_t>(size.size())}, size);
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::slice, {in, bg, sz}, {out}, cpu::SliceOptions{});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish();
}

TEST_CASE("SLICE: begin and size (-1 = to the end), int32 and int64, every type") {
  const Dims shape{3, 4, 5};
  int n = 0;
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    const Bytes input = input_of(type, 60);
    // x[1:3, 0:4, 2:4] and x[2:, 1:2, :]
    const std::vector<int64_t> want1 = [&] {
      std::vector<int64_t> w;
      for (int i = 1; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          for (int k = 2; k < 4; ++k) w.push_back((i * 4 + j) * 5 + k);
      return w;
    }();
    const std::vector<int64_t> want2 = [&] {
      std::vector<int64_t> w;
      for (int j = 1; j < 2; ++j)
        for (int k = 0; k < 5; ++k) w.push_back((2 * 4 + j) * 5 + k);
      return w;
    }();
    if (n++ % 2 == 0) {
      CHECK(run_everywhere(slice_model<int32_t>(type, shape, {1, 0, 2}, {2, -1, 2}, {2, 4, 2}), {input})[0] ==
            pick(input, type, want1));
      CHECK(run_everywhere(slice_model<int32_t>(type, shape, {2, 1, 0}, {-1, 1, 5}, {1, 1, 5}), {input})[0] ==
            pick(input, type, want2));
    } else {
      CHECK(run_everywhere(slice_model<int64_t>(type, shape, {1, 0, 2}, {2, 4, 2}, {2, 4, 2}), {input})[0] ==
            pick(input, type, want1));
      CHECK(run_everywhere(slice_model<int64_t>(type, shape, {2, 1, 0}, {1, 1, -1}, {1, 1, 5}), {input})[0] ==
            pick(input, type, want2));
    }
  }
}

TEST_CASE("SLICE: malformed operands are refused") {
  const Dims shape{3, 4};
  CHECK(load_error(slice_model<int32_t>(DType::int8, shape, {0, 1}, {3, 3}, {3, 3})).empty());
  check_refused(slice_model<int32_t>(DType::int8, shape, {0, 2}, {3, 3}, {3, 3}), "do not fit");
  check_refused(slice_model<int32_t>(DType::int8, shape, {-1, 0}, {1, 4}, {1, 4}), "outside");
  check_refused(slice_model<int32_t>(DType::int8, shape, {0, 0}, {-2, 4}, {1, 4}), "do not fit");
  check_refused(slice_model<int32_t>(DType::int8, shape, {0, 0, 0}, {1, 1, 1}, {1, 1}), "one entry per");
  check_refused(slice_model<int32_t>(DType::int8, shape, {0, 0}, {2, 2}, {2, 3}), "has shape");
  check_refused(slice_model<int64_t>(DType::int8, shape, {0, 0}, {1, int64_t{1} << 40}, {1, 4}), "do not fit");
}

// ---- SPLIT, SPLIT_V, UNPACK ----

// Flat indices of the elements whose coordinate on `axis` lies in [from, to), in row-major order.
std::vector<int64_t> axis_range(const Dims& shape, size_t axis, int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for_each_index(shape, [&](const std::vector<int64_t>& at) {
    if (at[axis] >= from && at[axis] < to) r.push_back(flat_index(shape, at));
  });
  return r;
}

Bytes split_model(DType type, const Dims& in_shape, int32_t axis, const std::vector<Dims>& out_shapes,
                  std::optional<int32_t> num_splits = std::nullopt) {
  tw::ModelBuilder b;
  const int32_t ax = b.add_constant<int32_t>("axis", DType::int32, {}, {axis});
  const int32_t in = data_tensor(b, "input", type, in_shape);
  std::vector<int32_t> outs;
  for (size_t i = 0; i < out_shapes.size(); ++i)
    outs.push_back(data_tensor(b, "out" + std::to_string(i), type, out_shapes[i]));
  b.add_operator(tw::Op::split, {ax, in}, outs,
                 cpu::SplitOptions{num_splits.value_or(static_cast<int32_t>(out_shapes.size()))});
  b.set_inputs({in});
  b.set_outputs(outs);
  return b.finish();
}

template <typename I>
Bytes split_v_model(DType type, const Dims& in_shape, const std::vector<I>& sizes, int32_t axis,
                    const std::vector<Dims>& out_shapes) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  const int32_t sz = b.add_constant<I>("sizes", sizeof(I) == 8 ? DType::int64 : DType::int32,
                                       {static_cast<int32_t>(sizes.size())}, sizes);
  const int32_t ax = b.add_constant<int32_t>("axis", DType::int32, {1}, {axis});
  std::vector<int32_t> outs;
  for (size_t i = 0; i < out_shapes.size(); ++i)
    outs.push_back(data_tensor(b, "out" + std::to_string(i), type, out_shapes[i]));
  b.add_operator(tw::Op::split_v, {in, sz, ax}, outs, cpu::SplitVOptions{static_cast<int32_t>(out_shapes.size())});
  b.set_inputs({in});
  b.set_outputs(outs);
  return b.finish();
}

TEST_CASE("SPLIT: the models' uint8 splits (1, 4 and 6 pieces) and every type, negative axis") {
  {  // Coral traffic SSD: [1,8,8,320] into 4 and 1; tools/split_concat: [1,8,8,6] into 6
    const Bytes input = input_of(DType::uint8, 8 * 8 * 320);
    const auto got4 = run_everywhere(split_model(DType::uint8, {1, 8, 8, 320}, 3, std::vector<Dims>(4, {1, 8, 8, 80})),
                                     {input});
    REQUIRE(got4.size() == 4);
    for (int i = 0; i < 4; ++i)
      CHECK(got4[static_cast<size_t>(i)] ==
            pick(input, DType::uint8, axis_range({1, 8, 8, 320}, 3, i * 80, i * 80 + 80)));
    const auto got1 = run_everywhere(split_model(DType::uint8, {1, 8, 8, 320}, -1, {{1, 8, 8, 320}}), {input});
    CHECK(got1[0] == input);
    const Bytes in6 = input_of(DType::uint8, 8 * 8 * 6);
    const auto got6 = run_everywhere(split_model(DType::uint8, {1, 8, 8, 6}, 3, std::vector<Dims>(6, {1, 8, 8, 1})),
                                     {in6});
    REQUIRE(got6.size() == 6);
    for (int i = 0; i < 6; ++i)
      CHECK(got6[static_cast<size_t>(i)] == pick(in6, DType::uint8, axis_range({1, 8, 8, 6}, 3, i, i + 1)));
  }
  const Dims shape{2, 6, 3};
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    const Bytes input = input_of(type, 36);
    const auto got = run_everywhere(split_model(type, shape, -2, std::vector<Dims>(3, {2, 2, 3})), {input});
    REQUIRE(got.size() == 3);
    for (int i = 0; i < 3; ++i)
      CHECK(got[static_cast<size_t>(i)] == pick(input, type, axis_range(shape, 1, 2 * i, 2 * i + 2)));
    const auto got0 = run_everywhere(split_model(type, shape, 0, std::vector<Dims>(2, {1, 6, 3})), {input});
    for (int i = 0; i < 2; ++i)
      CHECK(got0[static_cast<size_t>(i)] == pick(input, type, axis_range(shape, 0, i, i + 1)));
  }
}

TEST_CASE("SPLIT_V: sizes with a -1, int32 and int64 sizes") {
  const Dims shape{3, 7, 2};
  int n = 0;
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    const Bytes input = input_of(type, 42);
    const std::vector<Dims> outs{{3, 2, 2}, {3, 4, 2}, {3, 1, 2}};
    const auto got = n++ % 2 ? run_everywhere(split_v_model<int32_t>(type, shape, {2, -1, 1}, 1, outs), {input})
                             : run_everywhere(split_v_model<int64_t>(type, shape, {2, 4, 1}, -2, outs), {input});
    REQUIRE(got.size() == 3);
    CHECK(got[0] == pick(input, type, axis_range(shape, 1, 0, 2)));
    CHECK(got[1] == pick(input, type, axis_range(shape, 1, 2, 6)));
    CHECK(got[2] == pick(input, type, axis_range(shape, 1, 6, 7)));
  }
  const Bytes input = input_of(DType::int8, 42);
  const auto got = run_everywhere(split_v_model<int32_t>(DType::int8, shape, {-1}, 2, {shape}), {input});
  CHECK(got[0] == input);
}

TEST_CASE("SPLIT / SPLIT_V: malformed operands are refused") {
  const Dims shape{2, 6};
  check_refused(split_model(DType::int8, shape, 1, std::vector<Dims>(4, {2, 1})), "does not divide");
  check_refused(split_model(DType::int8, shape, 1, std::vector<Dims>(2, {2, 3}), 3), "num_splits is 3");
  check_refused(split_model(DType::int8, shape, 1, std::vector<Dims>(2, {2, 3}), 0), "num_splits is 0");
  check_refused(split_model(DType::int8, shape, 2, std::vector<Dims>(2, {2, 3})), "axis 2");
  check_refused(split_model(DType::int8, shape, -3, std::vector<Dims>(2, {2, 3})), "axis -3");
  check_refused(split_model(DType::int8, shape, 1, {{2, 3}, {2, 2}}), "expected [2,3]");
  const std::vector<Dims> outs{{2, 2}, {2, 4}};
  CHECK(load_error(split_v_model<int32_t>(DType::int8, shape, {2, 4}, 1, outs)).empty());
  check_refused(split_v_model<int32_t>(DType::int8, shape, {-1, -1}, 1, outs), "more than one -1");
  check_refused(split_v_model<int32_t>(DType::int8, shape, {2, 3}, 1, outs), "add up to 5");
  check_refused(split_v_model<int32_t>(DType::int8, shape, {7, -1}, 1, outs), "outside");
  check_refused(split_v_model<int32_t>(DType::int8, shape, {-2, 8}, 1, outs), "outside");
  check_refused(split_v_model<int64_t>(DType::int8, shape, {2, 4, 0}, 1, outs), "size_splits");
  check_refused(split_v_model<int32_t>(DType::int8, shape, {3, 3}, 1, outs), "expected [2,3]");
  {  // run-time axis
    tw::ModelBuilder b;
    const int32_t ax = plain_tensor(b, "axis", DType::int32, {});
    const int32_t in = data_tensor(b, "input", DType::int8, shape);
    const int32_t o0 = data_tensor(b, "o0", DType::int8, {2, 3});
    const int32_t o1 = data_tensor(b, "o1", DType::int8, {2, 3});
    b.add_operator(tw::Op::split, {ax, in}, {o0, o1}, cpu::SplitOptions{2});
    b.set_inputs({ax, in});
    b.set_outputs({o0, o1});
    check_refused(b.finish(), "computed at run time");
  }
}

Bytes unpack_model(DType type, const Dims& in_shape, int32_t axis, const std::vector<Dims>& out_shapes,
                   std::optional<int32_t> num = std::nullopt, std::optional<tw::Quant> out_quant = std::nullopt) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  std::vector<int32_t> outs;
  for (size_t i = 0; i < out_shapes.size(); ++i)
    outs.push_back(out_quant ? activation(b, ("out" + std::to_string(i)).c_str(), type, out_shapes[i], *out_quant)
                             : data_tensor(b, "out" + std::to_string(i), type, out_shapes[i]));
  b.add_operator(tw::Op::unpack, {in}, outs,
                 cpu::UnpackOptions{num.value_or(static_cast<int32_t>(out_shapes.size())), axis});
  b.set_inputs({in});
  b.set_outputs(outs);
  return b.finish();
}

TEST_CASE("UNPACK: MoveNet's int8 [17,2] on axis 1, other axes and types") {
  const Bytes input = input_of(DType::int8, 34);
  const auto got = run_everywhere(unpack_model(DType::int8, {17, 2}, 1, {{17}, {17}}), {input});
  REQUIRE(got.size() == 2);
  CHECK(got[0] == pick(input, DType::int8, axis_range({17, 2}, 1, 0, 1)));
  CHECK(got[1] == pick(input, DType::int8, axis_range({17, 2}, 1, 1, 2)));
  const Dims shape{3, 2, 4};
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    const Bytes in = input_of(type, 24);
    const auto g0 = run_everywhere(unpack_model(type, shape, 0, std::vector<Dims>(3, {2, 4})), {in});
    for (int i = 0; i < 3; ++i) CHECK(g0[static_cast<size_t>(i)] == pick(in, type, axis_range(shape, 0, i, i + 1)));
    const auto g2 = run_everywhere(unpack_model(type, shape, -1, std::vector<Dims>(4, {3, 2})), {in});
    for (int i = 0; i < 4; ++i) CHECK(g2[static_cast<size_t>(i)] == pick(in, type, axis_range(shape, 2, i, i + 1)));
  }
}

TEST_CASE("UNPACK: malformed operands are refused") {
  check_refused(unpack_model(DType::int8, {3, 2}, 0, std::vector<Dims>(2, {2}), 3), "num is 3");
  check_refused(unpack_model(DType::int8, {3, 2}, 0, std::vector<Dims>(2, {2})), "num is 2");
  check_refused(unpack_model(DType::int8, {3, 2}, 2, std::vector<Dims>(2, {3})), "axis 2");
  check_refused(unpack_model(DType::int8, {3, 2}, 1, std::vector<Dims>(2, {2})), "expected [3]");
  check_refused(unpack_model(DType::int8, {3, 2}, 1, std::vector<Dims>(2, {3}), std::nullopt, q(0.5f, -2)),
                "quantized differently");
}

// ---- PACK ----

Bytes pack_model(DType type, const Dims& in_shape, int32_t count, int32_t axis, const Dims& out_shape,
                 std::optional<int32_t> values_count = std::nullopt) {
  tw::ModelBuilder b;
  std::vector<int32_t> ins;
  for (int32_t i = 0; i < count; ++i) ins.push_back(data_tensor(b, "in" + std::to_string(i), type, in_shape));
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::pack, ins, {out}, cpu::PackOptions{values_count.value_or(count), axis});
  b.set_inputs(ins);
  b.set_outputs({out});
  return b.finish();
}

// PACK's output, element by element: output[..., i, ...] (i at `axis`) is input i at the other coordinates.
Bytes packed(DType type, const std::vector<Bytes>& inputs, const Dims& in_shape, size_t axis, const Dims& out_shape) {
  const size_t es = protocol::dtype_size(type);
  Bytes out;
  for_each_index(out_shape, [&](const std::vector<int64_t>& at) {
    std::vector<int64_t> rest = at;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(axis));
    const Bytes& in = inputs[static_cast<size_t>(at[axis])];
    const auto f = static_cast<size_t>(flat_index(in_shape, rest));
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(f * es),
               in.begin() + static_cast<std::ptrdiff_t>((f + 1) * es));
  });
  return out;
}

TEST_CASE("PACK: MoveNet's int32 and int8 stacks, every axis and type") {
  {
    std::vector<Bytes> ins{input_of(DType::int32, 1, 0), input_of(DType::int32, 1, 5), input_of(DType::int32, 1, 9)};
    CHECK(run_everywhere(pack_model(DType::int32, {1}, 3, 1, {1, 3}), ins)[0] ==
          packed(DType::int32, ins, {1}, 1, {1, 3}));
    std::vector<Bytes> ins17{input_of(DType::int32, 17, 0), input_of(DType::int32, 17, 100),
                             input_of(DType::int32, 17, 200)};
    CHECK(run_everywhere(pack_model(DType::int32, {17}, 3, 1, {17, 3}), ins17)[0] ==
          packed(DType::int32, ins17, {17}, 1, {17, 3}));
    std::vector<Bytes> ins8{input_of(DType::int8, 17, 0), input_of(DType::int8, 17, 40)};
    CHECK(run_everywhere(pack_model(DType::int8, {1, 17}, 2, 2, {1, 17, 2}), ins8)[0] ==
          packed(DType::int8, ins8, {1, 17}, 2, {1, 17, 2}));
  }
  const Dims shape{2, 3};
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    std::vector<Bytes> ins{input_of(type, 6, 0), input_of(type, 6, 11), input_of(type, 6, 23), input_of(type, 6, 31)};
    CHECK(run_everywhere(pack_model(type, shape, 4, 0, {4, 2, 3}), ins)[0] == packed(type, ins, shape, 0, {4, 2, 3}));
    CHECK(run_everywhere(pack_model(type, shape, 4, -2, {2, 4, 3}), ins)[0] == packed(type, ins, shape, 1, {2, 4, 3}));
    CHECK(run_everywhere(pack_model(type, shape, 4, 2, {2, 3, 4}), ins)[0] == packed(type, ins, shape, 2, {2, 3, 4}));
  }
  std::vector<Bytes> one{input_of(DType::float32, 6)};
  CHECK(run_everywhere(pack_model(DType::float32, shape, 1, -1, {2, 3, 1}), one)[0] == one[0]);
}

TEST_CASE("PACK: malformed operands are refused") {
  check_refused(pack_model(DType::int8, {2}, 2, 0, {2, 2}, 3), "values_count is 3");
  check_refused(pack_model(DType::int8, {2}, 2, 2, {2, 2}), "axis 2");
  check_refused(pack_model(DType::int8, {2}, 2, -3, {2, 2}), "axis -3");
  check_refused(pack_model(DType::int8, {2}, 2, 0, {2, 3}), "gives [2,2]");
  check_refused(pack_model(DType::int8, {1, 1, 1, 1, 1, 2}, 2, 0, {1, 1, 1, 1, 1, 2}), "more than 6");
  {
    tw::ModelBuilder b;
    const int32_t a = data_tensor(b, "a", DType::int8, {2});
    const int32_t c = data_tensor(b, "c", DType::int8, {3});
    const int32_t out = data_tensor(b, "output", DType::int8, {2, 2});
    b.add_operator(tw::Op::pack, {a, c}, {out}, cpu::PackOptions{2, 0});
    b.set_inputs({a, c});
    b.set_outputs({out});
    check_refused(b.finish(), "input 1 'c' has shape [3]");
  }
  {
    tw::ModelBuilder b;
    const int32_t a = data_tensor(b, "a", DType::int8, {2});
    const int32_t c = activation(b, "c", DType::int8, {2}, q(0.25f, -3));
    const int32_t out = data_tensor(b, "output", DType::int8, {2, 2});
    b.add_operator(tw::Op::pack, {a, c}, {out}, cpu::PackOptions{2, 0});
    b.set_inputs({a, c});
    b.set_outputs({out});
    check_refused(b.finish(), "quantized differently");
  }
  {
    tw::ModelBuilder b;
    const int32_t a = data_tensor(b, "a", DType::int32, {2});
    const int32_t c = data_tensor(b, "c", DType::float32, {2});
    const int32_t out = data_tensor(b, "output", DType::int32, {2, 2});
    b.add_operator(tw::Op::pack, {a, c}, {out}, cpu::PackOptions{2, 0});
    b.set_inputs({a, c});
    b.set_outputs({out});
    check_refused(b.finish(), "inputs");
  }
}

// ---- SQUEEZE, EXPAND_DIMS ----

Bytes squeeze_model(DType type, const Dims& in_shape, std::vector<int32_t> dims, const Dims& out_shape) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::squeeze, {in}, {out}, cpu::SqueezeOptions{std::move(dims)});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish();
}

template <typename I>
Bytes expand_dims_model(DType type, const Dims& in_shape, I axis, const Dims& out_shape) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  const int32_t ax = b.add_constant<I>("axis", sizeof(I) == 8 ? DType::int64 : DType::int32, {1}, {axis});
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::expand_dims, {in, ax}, {out}, cpu::ExpandDimsOptions{});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish();
}

TEST_CASE("SQUEEZE and EXPAND_DIMS: the data pass unchanged under the shape the operator defines") {
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    const Bytes input = input_of(type, 6);
    CHECK(run_everywhere(squeeze_model(type, {1, 2, 1, 3, 1}, {}, {2, 3}), {input})[0] == input);
    CHECK(run_everywhere(squeeze_model(type, {1, 2, 1, 3, 1}, {0, -1}, {2, 1, 3}), {input})[0] == input);
    CHECK(run_everywhere(squeeze_model(type, {1, 2, 1, 3, 1}, {2, 2}, {1, 2, 3, 1}), {input})[0] == input);
    CHECK(run_everywhere(expand_dims_model<int32_t>(type, {2, 3}, 0, {1, 2, 3}), {input})[0] == input);
    CHECK(run_everywhere(expand_dims_model<int32_t>(type, {2, 3}, -1, {2, 3, 1}), {input})[0] == input);
    CHECK(run_everywhere(expand_dims_model<int64_t>(type, {2, 3}, 1, {2, 1, 3}), {input})[0] == input);
    CHECK(run_everywhere(expand_dims_model<int64_t>(type, {2, 3}, -3, {1, 2, 3}), {input})[0] == input);
  }
  const Bytes one = input_of(DType::float32, 1);
  CHECK(run_everywhere(squeeze_model(DType::float32, {1, 1}, {}, {}), {one})[0] == one);
  CHECK(run_everywhere(expand_dims_model<int32_t>(DType::float32, {}, 0, {1}), {one})[0] == one);
}

TEST_CASE("SQUEEZE and EXPAND_DIMS: malformed operands are refused") {
  check_refused(squeeze_model(DType::int8, {1, 2, 1}, {1}, {1, 1}), "size 2, not 1");
  check_refused(squeeze_model(DType::int8, {1, 2, 1}, {3}, {2}), "outside");
  check_refused(squeeze_model(DType::int8, {1, 2, 1}, {-4}, {2}), "outside");
  check_refused(squeeze_model(DType::int8, {1, 2, 1}, {}, {1, 2}), "expected [2]");
  check_refused(squeeze_model(DType::int8, {1, 2, 1}, {0}, {2}), "expected [2,1]");
  check_refused(expand_dims_model<int32_t>(DType::int8, {2, 3}, 3, {2, 3, 1}), "outside");
  check_refused(expand_dims_model<int32_t>(DType::int8, {2, 3}, -4, {1, 2, 3}), "outside");
  check_refused(expand_dims_model<int32_t>(DType::int8, {2, 3}, 1, {1, 2, 3}), "expected [2,1,3]");
  check_refused(expand_dims_model<int32_t>(DType::int8, {1, 1, 1, 1, 1, 2}, 0, {1, 1, 1, 1, 1, 2}), "rank");
  {
    tw::ModelBuilder b;
    const int32_t in = data_tensor(b, "input", DType::int8, {2});
    const int32_t ax = plain_tensor(b, "axis", DType::int32, {1});
    const int32_t out = data_tensor(b, "output", DType::int8, {1, 2});
    b.add_operator(tw::Op::expand_dims, {in, ax}, {out}, cpu::ExpandDimsOptions{});
    b.set_inputs({in, ax});
    b.set_outputs({out});
    check_refused(b.finish(), "computed at run time");
  }
  {
    tw::ModelBuilder b;
    const int32_t in = data_tensor(b, "input", DType::int8, {2});
    const int32_t ax = b.add_constant<int32_t>("axis", DType::int32, {2}, {0, 1});
    const int32_t out = data_tensor(b, "output", DType::int8, {1, 2});
    b.add_operator(tw::Op::expand_dims, {in, ax}, {out}, cpu::ExpandDimsOptions{});
    b.set_inputs({in});
    b.set_outputs({out});
    check_refused(b.finish(), "holds 2 values");
  }
}

// ---- GATHER ----

template <typename I>
Bytes index_bytes(const std::vector<int64_t>& v) {
  return bytes_of(std::vector<I>(v.begin(), v.end()));
}

// tf.gather(params, indices, axis, batch_dims), element by element: output coordinates are
// params[:axis] + indices[batch_dims:] + params[axis+1:]; the index read is indices[out[:batch_dims] + the
// indices part]; the params element is out[:axis] + [index] + the trailing part.
std::vector<int64_t> gather_walk(const Dims& params, const Dims& indices_shape, const std::vector<int64_t>& indices,
                                 size_t axis, size_t batch_dims, Dims* out_shape) {
  Dims out(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices_shape.begin() + static_cast<std::ptrdiff_t>(batch_dims), indices_shape.end());
  out.insert(out.end(), params.begin() + static_cast<std::ptrdiff_t>(axis + 1), params.end());
  *out_shape = out;
  const size_t index_part = indices_shape.size() - batch_dims;
  std::vector<int64_t> picks;
  for_each_index(out, [&](const std::vector<int64_t>& at) {
    std::vector<int64_t> where(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(batch_dims));
    where.insert(where.end(), at.begin() + static_cast<std::ptrdiff_t>(axis),
                 at.begin() + static_cast<std::ptrdiff_t>(axis + index_part));
    const int64_t index = indices[static_cast<size_t>(flat_index(indices_shape, where))];
    std::vector<int64_t> from(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(axis));
    from.push_back(index);
    from.insert(from.end(), at.begin() + static_cast<std::ptrdiff_t>(axis + index_part), at.end());
    picks.push_back(flat_index(params, from));
  });
  return picks;
}

Bytes gather_model(DType type, const Dims& params, DType index_type, const Dims& indices_shape, int32_t axis,
                   int32_t batch_dims, const Dims& out_shape, const std::vector<int64_t>* constant_indices = nullptr) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "params", type, params);
  int32_t idx;
  if (constant_indices && index_type == DType::int64)
    idx = b.add_constant<int64_t>("indices", DType::int64, indices_shape, *constant_indices);
  else if (constant_indices)
    idx = b.add_constant<int32_t>("indices", DType::int32, indices_shape,
                                  std::vector<int32_t>(constant_indices->begin(), constant_indices->end()));
  else
    idx = plain_tensor(b, "indices", index_type, indices_shape);
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::gather, {in, idx}, {out}, cpu::GatherOptions{axis, batch_dims});
  b.set_inputs(constant_indices ? std::vector<int32_t>{in} : std::vector<int32_t>{in, idx});
  b.set_outputs({out});
  return b.finish();
}

struct GatherCase {
  Dims params, indices_shape;
  std::vector<int64_t> indices;
  int32_t axis, batch_dims;
};

TEST_CASE("GATHER: axes (negative too), batch_dims, int32 and int64 indices, every type") {
  const std::vector<GatherCase> cases{
      {{5, 3}, {4}, {4, 0, 2, 2}, 0, 0},
      {{2, 5, 3}, {2, 2}, {1, 4, 0, 3}, 1, 0},
      {{2, 5, 3}, {2, 2}, {1, 4, 0, 3}, -2, 0},
      {{2, 3, 4}, {3}, {3, 0, 1}, -1, 0},
      {{2, 3, 4}, {}, {2}, 2, 0},                              // a scalar index drops the axis
      {{2, 5, 3}, {2, 3}, {4, 0, 1, 2, 2, 3}, 1, 1},           // batch_dims 1: each batch its own indices
      {{2, 4, 5}, {2, 2}, {0, 4, 3, 1}, 2, -1},                // batch_dims -1 = 1, axis after the batch
      {{2, 3, 4, 2}, {2, 3, 2}, {1, 0, 3, 3, 2, 0, 0, 1, 2, 3, 1, 1}, 2, 2},  // batch_dims 2
      {{3, 2}, {2, 2, 2}, {0, 2, 1, 1, 2, 0, 0, 0}, 0, 0},     // multi-dimensional indices
  };
  int n = 0;
  for (const GatherCase& c : cases) {
    const auto rank = static_cast<int32_t>(c.params.size());
    const auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
    const auto index_rank = static_cast<int32_t>(c.indices_shape.size());
    const auto batch = static_cast<size_t>(c.batch_dims < 0 ? c.batch_dims + index_rank : c.batch_dims);
    Dims out_shape;
    const std::vector<int64_t> picks = gather_walk(c.params, c.indices_shape, c.indices, axis, batch, &out_shape);
    for (DType type : kAllTypes) {
      const DType it = n++ % 2 ? DType::int64 : DType::int32;
      CAPTURE(dims_text(c.params));
      CAPTURE(c.axis);
      CAPTURE(c.batch_dims);
      CAPTURE(protocol::dtype_name(type));
      const Bytes params = input_of(type, element_count(c.params));
      const Bytes idx = it == DType::int64 ? index_bytes<int64_t>(c.indices) : index_bytes<int32_t>(c.indices);
      const auto got = run_everywhere(
          gather_model(type, c.params, it, c.indices_shape, c.axis, c.batch_dims, out_shape), {params, idx});
      CHECK(got[0] == pick(params, type, picks));
      const auto got_const = run_everywhere(
          gather_model(type, c.params, it, c.indices_shape, c.axis, c.batch_dims, out_shape, &c.indices), {params});
      CHECK(got_const[0] == got[0]);
    }
  }
}

TEST_CASE("GATHER: an index outside the axis fails the inference; malformed operands are refused") {
  const Dims params{4, 3};
  for (DType it : {DType::int32, DType::int64}) {
    const Bytes model = gather_model(DType::int8, params, it, {3}, 0, 0, {3, 3});
    const Bytes data = input_of(DType::int8, 12);
    for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 4, 1}, std::vector<int64_t>{-1, 0, 0},
                                            std::vector<int64_t>{0, 1, int64_t{1} << 33}}) {
      if (it == DType::int32 && bad[2] > INT32_MAX) continue;
      const Bytes idx = it == DType::int64 ? index_bytes<int64_t>(bad) : index_bytes<int32_t>(bad);
      for (const char* kernels : {"ref", "opt"}) {
        const std::string error = invoke_error(model, {data, idx}, kernels);
        CHECK_MESSAGE(error.find("outside [0, 4)") != std::string::npos, error);
      }
    }
    const Bytes good = it == DType::int64 ? index_bytes<int64_t>({3, 0, 3}) : index_bytes<int32_t>({3, 0, 3});
    CHECK(invoke_error(model, {data, good}).empty());
  }
  const std::vector<int64_t> bad_constant{0, 5};
  check_refused(gather_model(DType::int8, params, DType::int32, {2}, 0, 0, {2, 3}, &bad_constant), "outside [0, 4)");
  check_refused(gather_model(DType::int8, params, DType::int32, {2}, 2, 0, {2, 3}), "axis 2");
  check_refused(gather_model(DType::int8, params, DType::int32, {2}, -3, 0, {2, 3}), "axis -3");
  check_refused(gather_model(DType::int8, params, DType::int32, {2}, 0, 0, {3, 3}), "gives another");
  check_refused(gather_model(DType::int8, params, DType::int32, {4}, 0, 1, {4, 3}), "batch_dims 1 is greater");
  check_refused(gather_model(DType::int8, params, DType::int32, {4}, 0, 2, {4, 3}), "batch_dims 2 is outside");
  check_refused(gather_model(DType::int8, params, DType::int32, {3, 2}, 1, 1, {4, 2}), "batch dimension 0");
  check_refused(gather_model(DType::int8, params, DType::int16, {2}, 0, 0, {2, 3}), "indices");
  check_refused(gather_model(DType::int8, params, DType::float32, {2}, 0, 0, {2, 3}), "indices");
}

// ---- GATHER_ND ----

// tf.gather_nd, element by element: output coordinates are indices.shape[:-1] + params.shape[depth:]; the
// params element is the index tuple at the leading coordinates followed by the trailing coordinates.
std::vector<int64_t> gather_nd_walk(const Dims& params, const Dims& indices_shape, const std::vector<int64_t>& indices,
                                    Dims* out_shape) {
  const auto depth = static_cast<size_t>(indices_shape.back());
  Dims out(indices_shape.begin(), indices_shape.end() - 1);
  out.insert(out.end(), params.begin() + static_cast<std::ptrdiff_t>(depth), params.end());
  *out_shape = out;
  const Dims tuples(indices_shape.begin(), indices_shape.end() - 1);
  std::vector<int64_t> picks;
  for_each_index(out, [&](const std::vector<int64_t>& at) {
    const std::vector<int64_t> lead(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(tuples.size()));
    const int64_t t = flat_index(tuples, lead);
    std::vector<int64_t> from;
    for (size_t j = 0; j < depth; ++j) from.push_back(indices[static_cast<size_t>(t) * depth + j]);
    from.insert(from.end(), at.begin() + static_cast<std::ptrdiff_t>(tuples.size()), at.end());
    picks.push_back(flat_index(params, from));
  });
  return picks;
}

Bytes gather_nd_model(DType type, const Dims& params, DType index_type, const Dims& indices_shape,
                      const Dims& out_shape, const std::vector<int64_t>* constant_indices = nullptr) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "params", type, params);
  int32_t idx;
  if (constant_indices && index_type == DType::int64)
    idx = b.add_constant<int64_t>("indices", DType::int64, indices_shape, *constant_indices);
  else if (constant_indices)
    idx = b.add_constant<int32_t>("indices", DType::int32, indices_shape,
                                  std::vector<int32_t>(constant_indices->begin(), constant_indices->end()));
  else
    idx = plain_tensor(b, "indices", index_type, indices_shape);
  const int32_t out = data_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::gather_nd, {in, idx}, {out}, cpu::GatherNdOptions{});
  b.set_inputs(constant_indices ? std::vector<int32_t>{in} : std::vector<int32_t>{in, idx});
  b.set_outputs({out});
  return b.finish();
}

TEST_CASE("GATHER_ND: MoveNet's int8 gathers, slices and single elements, int32 and int64 indices, every type") {
  struct Case {
    Dims params, indices_shape;
    std::vector<int64_t> indices;
  };
  const std::vector<Case> movenet{
      {{1, 48, 48, 34}, {1, 3}, {0, 20, 31}},
      {{1, 48, 48, 34}, {17, 3}, {}},
      {{17, 17, 2}, {17, 2}, {}},
      {{1, 48, 48, 17}, {17, 4}, {}},
  };
  std::mt19937 rng(7);
  for (Case c : movenet) {
    if (c.indices.empty()) {  // random in-range tuples
      const auto depth = static_cast<size_t>(c.indices_shape.back());
      for (int64_t t = 0; t < element_count(c.indices_shape) / static_cast<int64_t>(depth); ++t)
        for (size_t j = 0; j < depth; ++j)
          c.indices.push_back(std::uniform_int_distribution<int64_t>(0, c.params[j] - 1)(rng));
    }
    Dims out_shape;
    const std::vector<int64_t> picks = gather_nd_walk(c.params, c.indices_shape, c.indices, &out_shape);
    const Bytes params = input_of(DType::int8, element_count(c.params));
    const auto got = run_everywhere(gather_nd_model(DType::int8, c.params, DType::int32, c.indices_shape, out_shape),
                                    {params, index_bytes<int32_t>(c.indices)});
    CHECK(got[0] == pick(params, DType::int8, picks));
  }
  const std::vector<Case> cases{
      {{3, 4}, {2}, {2, 1}},                  // one element, output a scalar
      {{3, 4}, {3, 1}, {2, 0, 1}},            // rows
      {{2, 3, 4}, {2, 2, 2}, {1, 2, 0, 0, 1, 1, 0, 2}},
      {{2, 3, 4}, {2, 3}, {1, 2, 3, 0, 1, 0}},
  };
  int n = 0;
  for (const Case& c : cases) {
    Dims out_shape;
    const std::vector<int64_t> picks = gather_nd_walk(c.params, c.indices_shape, c.indices, &out_shape);
    for (DType type : kAllTypes) {
      CAPTURE(dims_text(c.params));
      CAPTURE(protocol::dtype_name(type));
      const DType it = n++ % 2 ? DType::int64 : DType::int32;
      const Bytes params = input_of(type, element_count(c.params));
      const Bytes idx = it == DType::int64 ? index_bytes<int64_t>(c.indices) : index_bytes<int32_t>(c.indices);
      const auto got = run_everywhere(gather_nd_model(type, c.params, it, c.indices_shape, out_shape), {params, idx});
      CHECK(got[0] == pick(params, type, picks));
      const auto got_const =
          run_everywhere(gather_nd_model(type, c.params, it, c.indices_shape, out_shape, &c.indices), {params});
      CHECK(got_const[0] == got[0]);
    }
  }
}

TEST_CASE("GATHER_ND: an index outside its dimension fails the inference; malformed operands are refused") {
  const Dims params{3, 4};
  const Bytes data = input_of(DType::int8, 12);
  for (DType it : {DType::int32, DType::int64}) {
    const Bytes model = gather_nd_model(DType::int8, params, it, {2, 2}, {2});
    // [0, 5] would land inside the flat input (element 5) but 5 is outside dimension 1.
    for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 0, 0, 5}, std::vector<int64_t>{3, 0, 0, 0},
                                            std::vector<int64_t>{1, -1, 0, 0}}) {
      const Bytes idx = it == DType::int64 ? index_bytes<int64_t>(bad) : index_bytes<int32_t>(bad);
      for (const char* kernels : {"ref", "opt"}) {
        const std::string error = invoke_error(model, {data, idx}, kernels);
        CHECK_MESSAGE(error.find("outside") != std::string::npos, error);
      }
    }
    const Bytes good = it == DType::int64 ? index_bytes<int64_t>({2, 3, 0, 0}) : index_bytes<int32_t>({2, 3, 0, 0});
    CHECK(invoke_error(model, {data, good}).empty());
  }
  const std::vector<int64_t> bad_constant{0, 4};
  check_refused(gather_nd_model(DType::int8, params, DType::int32, {2}, {}, &bad_constant), "outside [0, 4)");
  check_refused(gather_nd_model(DType::int8, params, DType::int32, {3}, {}), "more than the input's rank");
  check_refused(gather_nd_model(DType::int8, params, DType::int32, {2, 1}, {2, 3}), "gives [2,4]");
  check_refused(gather_nd_model(DType::int8, params, DType::int32, {}, {4}), "scalar");
  check_refused(gather_nd_model(DType::int8, params, DType::float32, {2}, {}), "indices");
}

// ---- DEPTH_TO_SPACE, SPACE_TO_DEPTH ----

Bytes space_depth_model(bool to_space, DType type, const Dims& in_shape, int32_t block, const Dims& out_shape) {
  tw::ModelBuilder b;
  const int32_t in = data_tensor(b, "input", type, in_shape);
  const int32_t out = data_tensor(b, "output", type, out_shape);
  if (to_space) b.add_operator(tw::Op::depth_to_space, {in}, {out}, cpu::DepthToSpaceOptions{block});
  else b.add_operator(tw::Op::space_to_depth, {in}, {out}, cpu::SpaceToDepthOptions{block});
  b.set_inputs({in});
  b.set_outputs({out});
  return b.finish();
}

// tf.nn.depth_to_space's definition, element by element: output[b, y, x, c] is
// input[b, y / bs, x / bs, ((y % bs) * bs + x % bs) * output_depth + c].
std::vector<int64_t> depth_to_space_walk(const Dims& in, int32_t bs) {
  const Dims out{in[0], in[1] * bs, in[2] * bs, in[3] / (bs * bs)};
  std::vector<int64_t> picks;
  for_each_index(out, [&](const std::vector<int64_t>& o) {
    picks.push_back(flat_index(in, {o[0], o[1] / bs, o[2] / bs, ((o[1] % bs) * bs + o[2] % bs) * out[3] + o[3]}));
  });
  return picks;
}

TEST_CASE("DEPTH_TO_SPACE and SPACE_TO_DEPTH: TensorFlow's examples and every type") {
  {  // tf.nn.depth_to_space example: [1,1,1,4] [1,2,3,4] -> [[1,2],[3,4]], and back
    const Bytes x = bytes_of(std::vector<float>{1, 2, 3, 4});
    CHECK(run_everywhere(space_depth_model(true, DType::float32, {1, 1, 1, 4}, 2, {1, 2, 2, 1}), {x})[0] == x);
    CHECK(run_everywhere(space_depth_model(false, DType::float32, {1, 2, 2, 1}, 2, {1, 1, 1, 4}), {x})[0] == x);
    // [1,2,2,4] depth 4 -> [1,4,4,1]: the TensorFlow documentation's table.
    const Bytes in = bytes_of(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    const Bytes out = bytes_of(std::vector<int32_t>{1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16});
    CHECK(run_everywhere(space_depth_model(true, DType::int32, {1, 2, 2, 4}, 2, {1, 4, 4, 1}), {in})[0] == out);
    CHECK(run_everywhere(space_depth_model(false, DType::int32, {1, 4, 4, 1}, 2, {1, 2, 2, 4}), {out})[0] == in);
  }
  for (DType type : kAllTypes) {
    CAPTURE(protocol::dtype_name(type));
    for (const auto& [shape, bs] : {std::pair{Dims{2, 2, 3, 8}, 2}, std::pair{Dims{1, 2, 1, 18}, 3},
                                    std::pair{Dims{1, 3, 2, 5}, 1}}) {
      const Dims out{shape[0], shape[1] * bs, shape[2] * bs, shape[3] / (bs * bs)};
      const Bytes input = input_of(type, element_count(shape));
      const Bytes deep_to_wide = pick(input, type, depth_to_space_walk(shape, bs));
      CHECK(run_everywhere(space_depth_model(true, type, shape, bs, out), {input})[0] == deep_to_wide);
      CHECK(run_everywhere(space_depth_model(false, type, out, bs, shape), {deep_to_wide})[0] == input);
    }
  }
}

TEST_CASE("DEPTH_TO_SPACE and SPACE_TO_DEPTH: malformed operands are refused") {
  check_refused(space_depth_model(true, DType::int8, {1, 2, 2, 4}, 0, {1, 2, 2, 4}), "block_size is 0");
  check_refused(space_depth_model(false, DType::int8, {1, 2, 2, 4}, -2, {1, 2, 2, 4}), "block_size is -2");
  check_refused(space_depth_model(true, DType::int8, {1, 2, 2, 6}, 2, {1, 4, 4, 1}), "does not divide");
  check_refused(space_depth_model(false, DType::int8, {1, 3, 2, 1}, 2, {1, 1, 1, 4}), "must divide");
  check_refused(space_depth_model(true, DType::int8, {1, 2, 2, 8}, 2, {1, 4, 4, 1}), "expected [1,4,4,2]");
  check_refused(space_depth_model(false, DType::int8, {1, 4, 4, 2}, 2, {1, 2, 2, 4}), "expected [1,2,2,8]");
  check_refused(space_depth_model(true, DType::int8, {2, 2, 4}, 2, {4, 4, 1}), "rank 3");
  check_refused(space_depth_model(true, DType::int8, {1, 1, 1, 4}, 65536, {1, 1, 1, 4}), "divide");
}

}  // namespace

// ---- The optimised CONCATENATION and STRIDED_SLICE kernels against the reference ones ----
// Kernel parameters straight to both backends (exact-size buffers, so AddressSanitizer sees any stray access): the
// optimised backend at every SIMD level of this processor, on 1 thread and on 3 threads that hand out even the
// smallest operator (parts then cut rows and slabs anywhere), its output filled beforehand with 0x00 and with 0xFF
// so a byte it leaves unwritten shows. Then whole models through run_everywhere, against values computed here.

namespace {

struct OptBackends {
  std::vector<std::pair<std::string, std::unique_ptr<cpu::OptimizedKernelBackend>>> list;
  OptBackends() {
    for (cpu::SimdLevel level : cpu::available_simd_levels())
      for (size_t threads : {size_t{1}, size_t{3}})
        list.emplace_back(std::string(cpu::simd_level_name(level)) + ", " + std::to_string(threads) + " threads",
                          std::make_unique<cpu::OptimizedKernelBackend>(level, threads, /*min_parallel_work=*/0));
  }
};

// Runs `call(backend, params)` with params.output set to a fresh buffer of `out_bytes`, on the reference backend and
// on every optimised one; CHECKs the bytes agree. Returns the reference's bytes.
template <typename P, typename Call>
Bytes compare_with_reference(const OptBackends& opt, P p, size_t out_bytes, Call call, const std::string& what) {
  Bytes want(out_bytes, 0x5A);
  want.reserve(1);  // an address even when empty
  p.output = want.data();
  cpu::ReferenceKernelBackend ref;
  call(ref, p);
  for (const auto& [name, backend] : opt.list)
    for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xFF}}) {
      Bytes got(out_bytes, fill);
      got.reserve(1);
      p.output = got.data();
      call(*backend, p);
      CHECK_MESSAGE(got == want, "opt (" << name << ") differs from ref: " << what);
    }
  return want;
}

// n random bytes; an empty buffer still has an address (the kernels may pass it to memcpy with size 0).
Bytes random_bytes(std::mt19937& g, size_t n) {
  Bytes b(n);
  b.reserve(1);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& v : b) v = static_cast<uint8_t>(byte(g));
  return b;
}

int32_t uniform_int(std::mt19937& g, int32_t lo, int32_t hi) {
  return std::uniform_int_distribution<int32_t>(lo, hi)(g);
}

// A quantization scale: ordinary ones, and extremes whose ratios saturate every value or round every value to the
// zero point.
float random_scale(std::mt19937& g) {
  static constexpr float kScales[] = {1e-9f, 1e-6f, 0.0039215689f, 0.02f, 0.1f, 0.25f, 0.5f,
                                      1.0f,  2.0f,  3.7f,          255.0f, 1e6f, 3e9f};
  if (uniform_int(g, 0, 2) == 0) return std::exp(std::uniform_real_distribution<float>(-12.0f, 12.0f)(g));
  return kScales[uniform_int(g, 0, static_cast<int32_t>(std::size(kScales)) - 1)];
}

// A concatenation of random inputs (data owned by the case).
struct ConcatCase {
  cpu::ConcatenationParams p;
  std::vector<Bytes> data;
  size_t out_bytes = 0;
  std::string text;
};

ConcatCase make_concat(std::mt19937& g, DType type, int64_t outer, int64_t inner, const std::vector<int32_t>& axes,
                       double rescale_chance) {
  ConcatCase c;
  c.p.dtype = type;
  c.p.element_size = protocol::dtype_size(type);
  c.p.outer_size = outer;
  c.p.inner_size = inner;
  const bool bytes = type == DType::int8 || type == DType::uint8;
  const int32_t zp_lo = type == DType::int8 ? -128 : 0, zp_hi = type == DType::int8 ? 127 : 255;
  if (bytes) {
    c.p.output_scale = random_scale(g);
    c.p.output_zero_point = uniform_int(g, zp_lo, zp_hi);
  }
  c.text = std::string(protocol::dtype_name(type)) + " outer " + std::to_string(outer) + " inner " +
           std::to_string(inner) + " axes";
  int64_t axis_total = 0;
  for (int32_t a : axes) {
    cpu::ConcatenationParams::Input e;
    e.axis_size = a;
    axis_total += a;
    if (bytes && std::bernoulli_distribution(rescale_chance)(g)) {
      e.rescale = true;
      e.scale = random_scale(g);
      e.zero_point = uniform_int(g, zp_lo, zp_hi);
    } else if (bytes) {
      e.scale = c.p.output_scale;
      e.zero_point = c.p.output_zero_point;
    }
    c.data.push_back(random_bytes(g, static_cast<size_t>(outer * a * inner) * c.p.element_size));
    c.text += " " + std::to_string(a) + (e.rescale ? "R" : "");
    c.p.inputs.push_back(e);
  }
  for (size_t i = 0; i < c.data.size(); ++i) c.p.inputs[i].data = c.data[i].data();
  c.out_bytes = static_cast<size_t>(outer * axis_total * inner) * c.p.element_size;
  return c;
}

Bytes compare_concat(const OptBackends& opt, const ConcatCase& c) {
  return compare_with_reference(opt, c.p, c.out_bytes,
                                [](cpu::KernelBackend& b, const cpu::ConcatenationParams& p) { b.concatenation(p); },
                                c.text);
}

TEST_CASE("CONCATENATION opt: random shapes, element sizes 1/2/4/8, copied and rescaled inputs, equal to ref") {
  const OptBackends opt;
  std::mt19937 g(20240611);
  constexpr DType kTypes[] = {DType::int8, DType::uint8, DType::int8, DType::uint8, DType::int16,
                              DType::int32, DType::float32, DType::int64};
  int with_tables = 0;  // cases whose rescaled inputs are large enough for the kernel's tables (>= 256 values each)
  for (int i = 0; i < 400; ++i) {
    const DType type = kTypes[uniform_int(g, 0, static_cast<int32_t>(std::size(kTypes)) - 1)];
    const int64_t outer = uniform_int(g, 0, 10) == 0 ? uniform_int(g, 0, 1) : uniform_int(g, 1, 60);
    const int64_t inner = uniform_int(g, 0, 12) == 0 ? 0 : uniform_int(g, 1, uniform_int(g, 0, 1) ? 3 : 40);
    std::vector<int32_t> axes(static_cast<size_t>(uniform_int(g, 1, 6)));
    for (auto& a : axes) a = uniform_int(g, 0, 8) == 0 ? 0 : uniform_int(g, 1, 70);
    const ConcatCase c = make_concat(g, type, outer, inner, axes, 0.5);
    int64_t rescaled = 0, mapped = 0;
    for (const auto& e : c.p.inputs)
      if (e.rescale) ++rescaled, mapped += outer * e.axis_size * inner;
    if (rescaled > 0 && mapped >= 256 * rescaled) ++with_tables;
    compare_concat(opt, c);
  }
  MESSAGE("random concatenations with rescale tables: " << with_tables);
  CHECK(with_tables >= 50);
}

TEST_CASE("CONCATENATION opt: every byte value through the rescale tables, int8 and uint8, extreme scales") {
  // Each input holds all 256 byte values in a row, so every entry of every table is compared with the
  // reference's float formula; the scales span ratios that saturate everything to ones that round to zero.
  const OptBackends opt;
  std::mt19937 g(77);
  for (DType type : {DType::int8, DType::uint8}) {
    for (int i = 0; i < 120; ++i) {
      ConcatCase c = make_concat(g, type, 2, 256, {1, 1, 1}, 0.8);
      for (auto& d : c.data)
        for (size_t j = 0; j < d.size(); ++j) d[j] = static_cast<uint8_t>(j * 37 + 11);  // all 256 per row
      compare_concat(opt, c);
    }
    // Equal scales but different zero points, a zero-point shift by the full range, and scale ratios of exactly
    // 2 and 1/2 (rounding ties).
    for (const auto& [in_scale, in_zp, out_scale, out_zp] :
         {std::tuple{0.5f, 0, 0.5f, 1}, std::tuple{0.5f, -128, 0.5f, 127}, std::tuple{1.0f, 3, 0.5f, -7},
          std::tuple{0.25f, 5, 0.5f, 0}, std::tuple{0.25f, -6, 0.5f, 100}, std::tuple{3e9f, 0, 1e-9f, 0}}) {
      ConcatCase c = make_concat(g, type, 1, 256, {1}, 0.0);
      c.p.output_scale = out_scale;
      c.p.output_zero_point = type == DType::uint8 ? std::abs(out_zp) : out_zp;
      c.p.inputs[0].rescale = true;
      c.p.inputs[0].scale = in_scale;
      c.p.inputs[0].zero_point = type == DType::uint8 ? std::abs(in_zp) : in_zp;
      for (size_t j = 0; j < 256; ++j) c.data[0][j] = static_cast<uint8_t>(j);
      compare_concat(opt, c);
    }
  }
}

TEST_CASE("CONCATENATION opt: YOLOv8's channel concatenations, large ones split across threads, many inputs") {
  const OptBackends opt;
  std::mt19937 g(8);
  // YOLOv8n's NHWC channel concatenations (outer = pixels, inner 1), one with a rescaled input.
  compare_concat(opt, make_concat(g, DType::int8, 160 * 160, 1, {16, 16, 16}, 0.0));
  compare_concat(opt, make_concat(g, DType::int8, 80 * 80, 1, {32, 32, 32, 32}, 0.0));
  compare_concat(opt, make_concat(g, DType::int8, 80 * 80, 1, {64, 80}, 1.0));
  compare_concat(opt, make_concat(g, DType::uint8, 40 * 40, 1, {256, 128}, 0.5));
  compare_concat(opt, make_concat(g, DType::int8, 1, 8400, {2, 2, 80}, 0.0));   // one row, cut inside slabs
  compare_concat(opt, make_concat(g, DType::float32, 3, 20000, {1, 2}, 0.0));  // few long rows
  // Inputs beyond the kernel's local slab list (16) and beyond its stack limits (64 inputs, 8 tables), which
  // run on the reference kernel.
  for (size_t n : {17, 40, 64, 65, 100}) {
    std::vector<int32_t> axes(n);
    for (auto& a : axes) a = uniform_int(g, 0, 3);
    compare_concat(opt, make_concat(g, DType::int8, 30, 2, axes, 0.0));
    compare_concat(opt, make_concat(g, DType::uint8, 30, 2, axes, 0.3));
    compare_concat(opt, make_concat(g, DType::int64, 30, 1, axes, 0.0));
  }
  for (int rescaled : {8, 9}) {
    ConcatCase c = make_concat(g, DType::int8, 50, 3, std::vector<int32_t>(10, 2), 0.0);
    for (int i = 0; i < rescaled; ++i) {
      c.p.inputs[static_cast<size_t>(i)].rescale = true;
      c.p.inputs[static_cast<size_t>(i)].scale = random_scale(g);
    }
    compare_concat(opt, c);
  }
}

// A strided slice of random bounds on `in_shape` (rank <= kMaxRank), data owned by the case.
struct SliceCase {
  cpu::StridedSliceParams p;
  Bytes input;
  size_t out_bytes = 0;
  std::string text;
};

// Visited elements of one dimension, counted by stepping (independent of the kernels' formula).
int64_t stepped_count(int32_t start, int32_t stop, int32_t step) {
  int64_t n = 0;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) ++n;
  return n;
}

SliceCase make_slice(std::mt19937& g, size_t element_size, const Dims& in_shape, const Dims& start, const Dims& stop,
                     const Dims& step) {
  SliceCase c;
  c.p.element_size = element_size;
  c.p.input_shape.rank = cpu::kMaxRank;
  const size_t pad = cpu::kMaxRank - in_shape.size();
  int64_t in_elements = 1, out_elements = 1;
  c.text = "element size " + std::to_string(element_size) + ":";
  for (size_t d = 0; d < static_cast<size_t>(cpu::kMaxRank); ++d) {
    const bool real = d >= pad;
    c.p.input_shape.dims[d] = real ? in_shape[d - pad] : 1;
    c.p.start[d] = real ? start[d - pad] : 0;
    c.p.stop[d] = real ? stop[d - pad] : 1;
    c.p.step[d] = real ? step[d - pad] : 1;
    in_elements *= c.p.input_shape.dims[d];
    out_elements *= stepped_count(c.p.start[d], c.p.stop[d], c.p.step[d]);
    if (real)
      c.text += " " + std::to_string(c.p.input_shape.dims[d]) + "[" + std::to_string(c.p.start[d]) + ":" +
                std::to_string(c.p.stop[d]) + ":" + std::to_string(c.p.step[d]) + "]";
  }
  c.p.output_elements = out_elements;
  c.input = random_bytes(g, static_cast<size_t>(in_elements) * element_size);
  c.p.input = c.input.data();
  c.out_bytes = static_cast<size_t>(out_elements) * element_size;
  return c;
}

// Random bounds in the form the loader resolves them to: forward, start in [0, size) and stop in (start, size];
// backward, start in [0, size) and stop in [-1, start); sometimes a whole dimension (mergeable) or an empty range.
SliceCase random_slice(std::mt19937& g, size_t element_size, const Dims& shape) {
  Dims start, stop, step;
  for (int32_t size : shape) {
    const int kind = uniform_int(g, 0, 9);
    if (kind < 3) {
      start.push_back(0), stop.push_back(size), step.push_back(1);
      continue;
    }
    const int32_t s = kind == 9 ? 1 : uniform_int(g, 0, 1) ? uniform_int(g, 1, 3) : -uniform_int(g, 1, 3);
    const int32_t a = uniform_int(g, 0, size - 1);
    step.push_back(s);
    start.push_back(a);
    if (uniform_int(g, 0, 40) == 0) stop.push_back(a);  // empty
    else stop.push_back(s > 0 ? uniform_int(g, a + 1, size) : uniform_int(g, -1, a - 1));
  }
  return make_slice(g, element_size, shape, start, stop, step);
}

Bytes compare_slice(const OptBackends& opt, const SliceCase& c) {
  return compare_with_reference(opt, c.p, c.out_bytes,
                                [](cpu::KernelBackend& b, const cpu::StridedSliceParams& p) { b.strided_slice(p); },
                                c.text);
}

TEST_CASE("STRIDED_SLICE opt: random ranks 1-6, forward and backward steps, element sizes 1/2/3/4/8, equal to ref") {
  const OptBackends opt;
  std::mt19937 g(4242);
  constexpr size_t kSizes[] = {1, 1, 2, 4, 8, 3};
  for (int i = 0; i < 500; ++i) {
    const size_t es = kSizes[static_cast<size_t>(uniform_int(g, 0, 5))];
    const int rank = uniform_int(g, 1, cpu::kMaxRank);
    Dims shape;
    for (int d = 0; d < rank; ++d) shape.push_back(uniform_int(g, 1, rank > 3 ? 6 : 24));
    compare_slice(opt, random_slice(g, es, shape));
  }
}

TEST_CASE("STRIDED_SLICE opt: YOLOv8's channel halves and detection-head rows, large slices split across threads") {
  const OptBackends opt;
  std::mt19937 g(9);
  compare_slice(opt, make_slice(g, 1, {1, 160, 160, 32}, {0, 0, 0, 0}, {1, 160, 160, 16}, {1, 1, 1, 1}));
  compare_slice(opt, make_slice(g, 1, {1, 80, 80, 64}, {0, 0, 0, 32}, {1, 80, 80, 64}, {1, 1, 1, 1}));
  compare_slice(opt, make_slice(g, 1, {1, 144, 8400}, {0, 64, 0}, {1, 144, 8400}, {1, 1, 1}));  // one run
  compare_slice(opt, make_slice(g, 4, {1, 84, 8400}, {0, 0, 0}, {1, 4, 8400}, {1, 1, 1}));
  // Backward and strided, large: every dimension reversed, channels every third, element sizes 1, 2, 4, 8.
  for (size_t es : {1, 2, 4, 8}) {
    compare_slice(opt, make_slice(g, es, {2, 64, 48, 30}, {1, 63, 47, 29}, {-1, -1, -1, -1}, {-1, -1, -1, -1}));
    compare_slice(opt, make_slice(g, es, {2, 64, 48, 30}, {0, 62, 1, 2}, {2, 0, 48, 30}, {1, -2, 1, 3}));
    compare_slice(opt, make_slice(g, es, {3, 50, 40, 20}, {2, 0, 39, 0}, {-1, 50, -1, 20}, {-1, 1, -2, 1}));
  }
  // Rank 6, each dimension a different kind.
  compare_slice(opt, make_slice(g, 2, {3, 4, 5, 6, 7, 8}, {0, 3, 1, 0, 6, 1}, {3, -1, 5, 6, -1, 8},
                                {1, -1, 2, 1, -3, 1}));
  // A single element and a slice of nothing.
  compare_slice(opt, make_slice(g, 8, {4, 5}, {3, 2}, {4, 3}, {1, 1}));
  compare_slice(opt, make_slice(g, 4, {4, 5}, {3, 2}, {3, 5}, {1, 1}));
}

// ---- whole models: CONCATENATION (opt kernels run by run_everywhere) ----

struct ConcatInput {
  Dims shape;
  float scale = 0.5f;
  int64_t zero_point = 0;
};

Bytes concat_model(DType type, const std::vector<ConcatInput>& inputs, int32_t axis, const Dims& out_shape,
                   float out_scale, int64_t out_zero_point) {
  tw::ModelBuilder b;
  const bool quantized = type == DType::int8 || type == DType::uint8;
  std::vector<int32_t> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    const ConcatInput& in = inputs[i];
    ins.push_back(quantized ? activation(b, name.c_str(), type, in.shape, q(in.scale, in.zero_point))
                            : plain_tensor(b, name.c_str(), type, in.shape));
  }
  const int32_t out = quantized ? activation(b, "output", type, out_shape, q(out_scale, out_zero_point))
                                : plain_tensor(b, "output", type, out_shape);
  b.add_operator(tw::Op::concatenation, ins, {out}, cpu::ConcatenationOptions{axis, cpu::Activation::none});
  b.set_inputs(ins);
  b.set_outputs({out});
  return b.finish();
}

// The expected concatenation: output element at `at` comes from the input whose range along `axis` holds at[axis];
// `convert` maps (input index, input bytes of the element) to the output bytes.
template <typename Convert>
Bytes concatenated(DType type, const std::vector<Bytes>& data, const std::vector<ConcatInput>& inputs, size_t axis,
                   const Dims& out_shape, Convert convert) {
  const size_t es = protocol::dtype_size(type);
  Bytes out;
  for_each_index(out_shape, [&](const std::vector<int64_t>& at) {
    size_t i = 0;
    int64_t along = at[axis];
    while (along >= inputs[i].shape[axis]) along -= inputs[i++].shape[axis];
    std::vector<int64_t> local = at;
    local[axis] = along;
    const auto f = static_cast<size_t>(flat_index(inputs[i].shape, local));
    const Bytes element(data[i].begin() + static_cast<std::ptrdiff_t>(f * es),
                        data[i].begin() + static_cast<std::ptrdiff_t>((f + 1) * es));
    const Bytes converted = convert(i, element);
    out.insert(out.end(), converted.begin(), converted.end());
  });
  return out;
}

TEST_CASE("CONCATENATION model: YOLOv8-style int8 channel concatenation, large, on every backend") {
  // [1,112,112,16] x 3 along the channels and along axis -3, and a float32 twin (2.4 MB: 3 threads split it).
  const std::vector<ConcatInput> ins(3, ConcatInput{{1, 112, 112, 16}, 0.5f, -3});
  std::vector<Bytes> data;
  for (int i = 0; i < 3; ++i) data.push_back(input_of(DType::int8, 112 * 112 * 16, i * 1000));
  const auto same = [](size_t, const Bytes& e) { return e; };
  CHECK(run_everywhere(concat_model(DType::int8, ins, 3, {1, 112, 112, 48}, 0.5f, -3), data)[0] ==
        concatenated(DType::int8, data, ins, 3, {1, 112, 112, 48}, same));
  CHECK(run_everywhere(concat_model(DType::int8, ins, -3, {1, 336, 112, 16}, 0.5f, -3), data)[0] ==
        concatenated(DType::int8, data, ins, 1, {1, 336, 112, 16}, same));
  std::vector<Bytes> floats;
  for (int i = 0; i < 3; ++i) floats.push_back(input_of(DType::float32, 112 * 112 * 16, i * 1000));
  CHECK(run_everywhere(concat_model(DType::float32, ins, 2, {1, 112, 336, 16}, 0, 0), floats)[0] ==
        concatenated(DType::float32, floats, ins, 2, {1, 112, 336, 16}, same));
  // int16 and int32 along the last axis with unequal widths.
  for (DType type : {DType::int16, DType::int32}) {
    const std::vector<ConcatInput> uneven{{{2, 7, 5}}, {{2, 7, 1}}, {{2, 7, 9}}};
    std::vector<Bytes> d{input_of(type, 70), input_of(type, 14, 100), input_of(type, 126, 200)};
    CHECK(run_everywhere(concat_model(type, uneven, -1, {2, 7, 15}, 0, 0), d)[0] ==
          concatenated(type, d, uneven, 2, {2, 7, 15}, same));
  }
}

TEST_CASE("CONCATENATION model: rescaled int8 and uint8 inputs (exact scale ratios, ties, saturation, underflow)") {
  // Scale ratios whose float arithmetic is exact, so the expected value is integer arithmetic: ratio 2 gives
  // 2 (q - zp) + out_zp, ratio 1/2 gives (q - zp) / 2 rounded half away from zero + out_zp, a ratio of 1e-5
  // rounds every value to out_zp, a ratio of 1e5 saturates every value but q == zp; all clamped to the type.
  for (DType type : {DType::int8, DType::uint8}) {
    CAPTURE(protocol::dtype_name(type));
    const bool s8 = type == DType::int8;
    const int64_t lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
    const float out_scale = 0.5f;
    const int64_t out_zp = s8 ? -5 : 120;
    struct Rescale {
      float scale;
      int64_t zero_point;
    };
    const std::vector<Rescale> rescales{{1.0f, s8 ? 3 : 130}, {0.25f, s8 ? -7 : 7}, {5e-6f, s8 ? 10 : 200},
                                        {5e4f, s8 ? -1 : 1}};
    std::vector<ConcatInput> ins{{{1, 16, 16, 5}, out_scale, out_zp}};  // copied
    for (const Rescale& r : rescales) ins.push_back({{1, 16, 16, 3}, r.scale, r.zero_point});
    std::vector<Bytes> data;
    for (size_t i = 0; i < ins.size(); ++i)
      data.push_back(input_of(type, element_count(ins[i].shape), static_cast<int64_t>(i) * 50));
    const auto expect = [&](size_t i, const Bytes& e) {
      if (i == 0) return e;
      const int64_t v = (s8 ? int64_t{static_cast<int8_t>(e[0])} : int64_t{e[0]}) - ins[i].zero_point;
      int64_t r = 0;
      switch (i) {
        case 1: r = 2 * v; break;
        case 2: r = v >= 0 ? (v + 1) / 2 : -((-v + 1) / 2); break;
        case 3: r = 0; break;
        case 4: r = v > 0 ? hi - out_zp : v < 0 ? lo - out_zp : 0; break;
      }
      const int64_t clamped = std::clamp(r + out_zp, lo, hi);
      return Bytes{static_cast<uint8_t>(clamped)};
    };
    const Dims out_shape{1, 16, 16, 17};
    CHECK(run_everywhere(concat_model(type, ins, 3, out_shape, out_scale, out_zp), data)[0] ==
          concatenated(type, data, ins, 3, out_shape, expect));
    // The same inputs stacked along the height, large enough to be split across threads.
    std::vector<ConcatInput> tall;
    std::vector<Bytes> tall_data;
    for (size_t i = 0; i < ins.size(); ++i) {
      tall.push_back({{1, 100, 64, 8}, ins[i].scale, ins[i].zero_point});
      tall_data.push_back(input_of(type, 100 * 64 * 8, static_cast<int64_t>(i) * 77));
    }
    const Dims tall_shape{1, 500, 64, 8};
    CHECK(run_everywhere(concat_model(type, tall, 1, tall_shape, out_scale, out_zp), tall_data)[0] ==
          concatenated(type, tall_data, tall, 1, tall_shape, expect));
  }
}

TEST_CASE("STRIDED_SLICE / SLICE model: large slices (split across threads), backward and strided, every type") {
  // Against the numpy walk; 3 threads split the float32 and int32 ones (runs of 2 MB and more) and the gathers
  // (64 K elements and more).
  CHECK(check_strided_slice(DType::int8, {1, 136, 136, 64},
                            SliceSpec{{0, 0, 0, 16}, {1, 136, 136, 48}, {1, 1, 1, 1}, {}}));
  CHECK(check_strided_slice(DType::float32, {1, 136, 136, 64},
                            SliceSpec{{0, 0, 0, 16}, {1, 136, 136, 48}, {1, 1, 1, 1}, {}}));
  for (DType type : {DType::int8, DType::int16, DType::float32, DType::int64}) {
    CAPTURE(protocol::dtype_name(type));
    CHECK(check_strided_slice(type, {1, 104, 100, 40},
                              SliceSpec{{0, -1, 0, 1}, {1, -105, 100, 40}, {1, -1, 2, 3}, {}}));
    CHECK(check_strided_slice(type, {2, 64, 64, 24},
                              SliceSpec{{-1, 0, -1, -1}, {-3, 64, -65, -25}, {-1, 1, -1, -1}, {}}));
  }
  const Dims shape{2, 220, 220, 16};
  const Bytes input = input_of(DType::int32, element_count(shape));
  std::vector<int64_t> want;
  for (int64_t y = 10; y < 220; ++y)
    for (int64_t x = 0; x < 220; ++x)
      for (int64_t c = 2; c < 14; ++c) want.push_back(((220 + y) * 220 + x) * 16 + c);
  CHECK(run_everywhere(slice_model<int32_t>(DType::int32, shape, {1, 10, 0, 2}, {1, -1, 220, 12}, {1, 210, 220, 12}),
                       {input})[0] == pick(input, DType::int32, want));
}

}  // namespace
