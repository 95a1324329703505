// aisrv CPU engine — checks shared by every operator's preparation (see prepare.hpp).
#include <cmath>
#include <cstring>

#include "prepare.hpp"
#include "../quant_math.hpp"

namespace aisrv::engine::cpu {

Result<void> PrepareContext::check_counts(size_t min_inputs, size_t max_inputs, size_t outputs) const {
  if (op_.inputs.size() < min_inputs || op_.inputs.size() > max_inputs) {
    if (min_inputs == max_inputs) return error("has {} inputs, expected {}", op_.inputs.size(), min_inputs);
    return error("has {} inputs, expected {} to {}", op_.inputs.size(), min_inputs, max_inputs);
  }
  if (op_.outputs.size() != outputs) return error("has {} outputs, expected {}", op_.outputs.size(), outputs);
  return {};
}

Result<const TensorSpec*> PrepareContext::input(size_t i, std::string_view what) const {
  const int32_t t = input_index(i);
  if (t == kNoTensor) return error("input {} ({}) is missing", i, what);
  return &tensor(t);
}

const TensorSpec* PrepareContext::optional_input(size_t i) const {
  const int32_t t = input_index(i);
  return t == kNoTensor ? nullptr : &tensor(t);
}

Result<void> PrepareContext::expect_type(const TensorSpec& t, std::initializer_list<DType> allowed,
                                         std::string_view what) const {
  for (DType d : allowed)
    if (t.type == d) return {};
  std::string list;
  for (DType d : allowed) list += (list.empty() ? "" : ", ") + std::string(protocol::dtype_name(d));
  return error("{} '{}' has type {}; supported: {}", what, t.name, protocol::dtype_name(t.type), list);
}

Result<void> PrepareContext::expect_same_type(const TensorSpec& a, const TensorSpec& b, std::string_view what) const {
  if (a.type != b.type)
    return error("{}: '{}' is {} but '{}' is {}", what, a.name, protocol::dtype_name(a.type), b.name,
                 protocol::dtype_name(b.type));
  return {};
}

Result<void> PrepareContext::expect_constant(const TensorSpec& t, std::string_view what) const {
  if (!t.is_constant())
    return error("{} '{}' is computed at run time; the cpu engine needs it constant", what, t.name);
  return {};
}

Result<Dims4> PrepareContext::dims4(const TensorSpec& t, std::string_view what) const {
  if (t.shape.rank != 4) return error("{} '{}' has rank {}, expected 4", what, t.name, t.shape.rank);
  return Dims4{t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
}

Result<float> PrepareContext::scale(const TensorSpec& t, std::string_view what) const {
  if (!t.quant.present()) return error("{} '{}' is not quantized", what, t.name);
  if (t.quant.per_channel())
    return error("{} '{}' has {} per-channel scales; a single scale is expected", what, t.name,
                 t.quant.scale.size());
  const float s = t.quant.scale[0];
  if (!std::isfinite(s) || !(s > 0.0f)) return error("{} '{}' has scale {}, not a positive number", what, t.name, s);
  return s;
}

Result<int32_t> PrepareContext::zero_point(const TensorSpec& t, std::string_view what) const {
  if (!t.quant.present()) return error("{} '{}' is not quantized", what, t.name);
  const int64_t zp = t.quant.zero_point[0];
  if (zp < type_min(t.type) || zp > type_max(t.type))
    return error("{} '{}' has zero point {}, outside the range of {}", what, t.name, zp,
                 protocol::dtype_name(t.type));
  return static_cast<int32_t>(zp);
}

Result<std::vector<int32_t>> PrepareContext::int32_values(const TensorSpec& t, std::string_view what) const {
  AISRV_TRY(expect_type(t, {DType::int32}, what));
  AISRV_TRY(expect_constant(t, what));
  std::vector<int32_t> v(t.bytes / sizeof(int32_t));
  std::memcpy(v.data(), t.data, v.size() * sizeof(int32_t));
  return v;
}

}  // namespace aisrv::engine::cpu
