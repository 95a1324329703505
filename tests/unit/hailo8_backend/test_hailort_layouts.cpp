// aisrv tests — the HailoRT C API layouts the product declares (engine/hailo8/runtime/hailort_abi.hpp), checked field
// by field — size, alignment, offset — against layouts transcribed here, per HailoRT version, from
// ../shared/design/hailort-c-api-facts.md §3 (measured there with a C11 program compiled against each tag's real
// hailort.h, x86_64 and aarch64 giving identical numbers). The tables are this test's own, not the product's header:
// a wrong declaration in the product fails here. Versions: 4.21.0, 4.22.0 and 4.23.0 share one hailort.h (md5
// identical, facts §1) and are the ones the loader accepts; 4.20.x is transcribed only where it differs
// (hailo_nms_shape_t), to show why the loader refuses it.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "aisrv/engine/hailo8/runtime/hailort_abi.hpp"
#include "aisrv/engine/hailo8/runtime/hailort_library.hpp"

namespace abi = aisrv::engine::hailo8::hailort_abi;
using aisrv::engine::hailo8::runtime::layout_supported;

namespace {

struct Field {
  const char* name;
  size_t offset, size;
};
struct Layout {
  const char* type;
  size_t size, align;
  std::vector<Field> fields;
};

// HailoRT 4.21.0 = 4.22.0 = 4.23.0 (facts §3.2-§3.7).
const std::vector<Layout>& layouts_4_21_to_4_23() {
  static const std::vector<Layout> t{
      {"hailo_version_t", 12, 4, {{"major", 0, 4}, {"minor", 4, 4}, {"revision", 8, 4}}},
      {"hailo_device_id_t", 32, 1, {{"id", 0, 32}}},
      {"hailo_format_t", 12, 4, {{"type", 0, 4}, {"order", 4, 4}, {"flags", 8, 4}}},
      {"hailo_3d_image_shape_t", 12, 4, {{"height", 0, 4}, {"width", 4, 4}, {"features", 8, 4}}},
      {"hailo_quant_info_t", 16, 4, {{"qp_zp", 0, 4}, {"qp_scale", 4, 4}, {"limvals_min", 8, 4}, {"limvals_max", 12, 4}}},
      {"hailo_nms_shape_t", 16, 4,
       {{"number_of_classes", 0, 4}, {"max_bboxes_per_class", 4, 4}, {"max_bboxes_total", 8, 4},
        {"max_accumulated_mask_size", 12, 4}}},
      {"hailo_vstream_info_t", 436, 4,
       {{"name", 0, 128}, {"network_name", 128, 257}, {"direction", 388, 4}, {"format", 392, 12}, {"shape", 404, 12},
        {"nms_shape", 404, 16}, {"quant_info", 420, 16}}},
      {"hailo_vstream_params_t", 28, 4,
       {{"user_buffer_format", 0, 12}, {"timeout_ms", 12, 4}, {"queue_size", 16, 4}, {"vstream_stats_flags", 20, 4},
        {"pipeline_elements_stats_flags", 24, 4}}},
      {"hailo_input_vstream_params_by_name_t", 156, 4, {{"name", 0, 128}, {"params", 128, 28}}},
      {"hailo_output_vstream_params_by_name_t", 156, 4, {{"name", 0, 128}, {"params", 128, 28}}},
      {"hailo_vdevice_params_t", 40, 8,
       {{"device_count", 0, 4}, {"device_ids", 8, 8}, {"scheduling_algorithm", 16, 4}, {"group_id", 24, 8},
        {"multi_process_service", 32, 1}}},
      {"hailo_stream_parameters_t", 80, 4, {{"stream_interface", 0, 4}, {"direction", 4, 4}, {"flags", 8, 4}}},
      {"hailo_stream_parameters_by_name_t", 208, 4, {{"name", 0, 128}, {"stream_params", 128, 80}}},
      {"hailo_network_parameters_by_name_t", 260, 2, {{"name", 0, 257}, {"network_params", 258, 2}}},
      {"hailo_configure_network_group_params_t", 10560, 8,
       {{"name", 0, 128}, {"batch_size", 128, 2}, {"power_mode", 132, 4}, {"latency", 136, 4},
        {"stream_params_by_name_count", 144, 8}, {"stream_params_by_name", 152, 8320},
        {"network_params_by_name_count", 8472, 8}, {"network_params_by_name", 8480, 2080}}},
      {"hailo_configure_params_t", 84488, 8, {{"network_group_params_count", 0, 8}, {"network_group_params", 8, 84480}}},
      // HEF inspection and host transforms (`aisrv hef verify-hailort`): facts §3.6 for hailo_stream_info_t, the
      // others from hailort.h of v4.23.0 (lines 835-905, 1290-1328, 1599-1602).
      {"hailo_nms_defuse_info_t", 132, 4, {{"class_group_index", 0, 4}, {"original_name", 4, 128}}},
      {"hailo_nms_info_t", 164, 4,
       {{"number_of_classes", 0, 4}, {"max_bboxes_per_class", 4, 4}, {"max_bboxes_total", 8, 4}, {"bbox_size", 12, 4},
        {"chunks_per_frame", 16, 4}, {"is_defused", 20, 1}, {"defuse_info", 24, 132}, {"burst_size", 156, 4},
        {"burst_type", 160, 4}}},
      {"hailo_stream_info_t", 340, 4,
       {{"shape", 0, 12}, {"hw_shape", 12, 12}, {"nms_info", 0, 164}, {"hw_data_bytes", 164, 4},
        {"hw_frame_size", 168, 4}, {"format", 172, 12}, {"direction", 184, 4}, {"index", 188, 1}, {"name", 189, 128},
        {"quant_info", 320, 16}, {"is_mux", 336, 1}}},
      {"hailo_transform_params_t", 16, 4, {{"transform_mode", 0, 4}, {"user_buffer_format", 4, 12}}},
      {"hailo_network_group_info_t", 129, 1, {{"name", 0, 128}, {"is_multi_context", 128, 1}}},
  };
  return t;
}

// HailoRT 4.20.0 / 4.20.1: hailo_nms_shape_t (facts §6) — same size, other fields.
const Layout kNmsShape_4_20{"hailo_nms_shape_t", 16, 4,
                            {{"number_of_classes", 0, 4}, {"max_bboxes_per_class|max_bboxes_total (union)", 4, 4},
                             {"max_accumulated_mask_size", 8, 4}, {"order_type", 12, 4}}};

// What the product declares, measured by the compiler.
struct Measured {
  size_t size, align;
  std::vector<Field> fields;
};
#define AISRV_FIELD(T, f) Field{#f, offsetof(abi::T, f), sizeof(abi::T::f)}
Measured measured(const std::string& type) {
  if (type == "hailo_version_t")
    return {sizeof(abi::hailo_version_t), alignof(abi::hailo_version_t),
            {AISRV_FIELD(hailo_version_t, major), AISRV_FIELD(hailo_version_t, minor),
             AISRV_FIELD(hailo_version_t, revision)}};
  if (type == "hailo_device_id_t")
    return {sizeof(abi::hailo_device_id_t), alignof(abi::hailo_device_id_t), {AISRV_FIELD(hailo_device_id_t, id)}};
  if (type == "hailo_format_t")
    return {sizeof(abi::hailo_format_t), alignof(abi::hailo_format_t),
            {AISRV_FIELD(hailo_format_t, type), AISRV_FIELD(hailo_format_t, order), AISRV_FIELD(hailo_format_t, flags)}};
  if (type == "hailo_3d_image_shape_t")
    return {sizeof(abi::hailo_3d_image_shape_t), alignof(abi::hailo_3d_image_shape_t),
            {AISRV_FIELD(hailo_3d_image_shape_t, height), AISRV_FIELD(hailo_3d_image_shape_t, width),
             AISRV_FIELD(hailo_3d_image_shape_t, features)}};
  if (type == "hailo_quant_info_t")
    return {sizeof(abi::hailo_quant_info_t), alignof(abi::hailo_quant_info_t),
            {AISRV_FIELD(hailo_quant_info_t, qp_zp), AISRV_FIELD(hailo_quant_info_t, qp_scale),
             AISRV_FIELD(hailo_quant_info_t, limvals_min), AISRV_FIELD(hailo_quant_info_t, limvals_max)}};
  if (type == "hailo_nms_shape_t")
    return {sizeof(abi::hailo_nms_shape_t), alignof(abi::hailo_nms_shape_t),
            {AISRV_FIELD(hailo_nms_shape_t, number_of_classes), AISRV_FIELD(hailo_nms_shape_t, max_bboxes_per_class),
             AISRV_FIELD(hailo_nms_shape_t, max_bboxes_total),
             AISRV_FIELD(hailo_nms_shape_t, max_accumulated_mask_size)}};
  if (type == "hailo_vstream_info_t")
    return {sizeof(abi::hailo_vstream_info_t), alignof(abi::hailo_vstream_info_t),
            {AISRV_FIELD(hailo_vstream_info_t, name), AISRV_FIELD(hailo_vstream_info_t, network_name),
             AISRV_FIELD(hailo_vstream_info_t, direction), AISRV_FIELD(hailo_vstream_info_t, format),
             AISRV_FIELD(hailo_vstream_info_t, shape), AISRV_FIELD(hailo_vstream_info_t, nms_shape),
             AISRV_FIELD(hailo_vstream_info_t, quant_info)}};
  if (type == "hailo_vstream_params_t")
    return {sizeof(abi::hailo_vstream_params_t), alignof(abi::hailo_vstream_params_t),
            {AISRV_FIELD(hailo_vstream_params_t, user_buffer_format), AISRV_FIELD(hailo_vstream_params_t, timeout_ms),
             AISRV_FIELD(hailo_vstream_params_t, queue_size), AISRV_FIELD(hailo_vstream_params_t, vstream_stats_flags),
             AISRV_FIELD(hailo_vstream_params_t, pipeline_elements_stats_flags)}};
  if (type == "hailo_input_vstream_params_by_name_t")
    return {sizeof(abi::hailo_input_vstream_params_by_name_t), alignof(abi::hailo_input_vstream_params_by_name_t),
            {AISRV_FIELD(hailo_input_vstream_params_by_name_t, name),
             AISRV_FIELD(hailo_input_vstream_params_by_name_t, params)}};
  if (type == "hailo_output_vstream_params_by_name_t")
    return {sizeof(abi::hailo_output_vstream_params_by_name_t), alignof(abi::hailo_output_vstream_params_by_name_t),
            {AISRV_FIELD(hailo_output_vstream_params_by_name_t, name),
             AISRV_FIELD(hailo_output_vstream_params_by_name_t, params)}};
  if (type == "hailo_vdevice_params_t")
    return {sizeof(abi::hailo_vdevice_params_t), alignof(abi::hailo_vdevice_params_t),
            {AISRV_FIELD(hailo_vdevice_params_t, device_count), AISRV_FIELD(hailo_vdevice_params_t, device_ids),
             AISRV_FIELD(hailo_vdevice_params_t, scheduling_algorithm), AISRV_FIELD(hailo_vdevice_params_t, group_id),
             AISRV_FIELD(hailo_vdevice_params_t, multi_process_service)}};
  if (type == "hailo_stream_parameters_t")
    return {sizeof(abi::hailo_stream_parameters_t), alignof(abi::hailo_stream_parameters_t),
            {AISRV_FIELD(hailo_stream_parameters_t, stream_interface), AISRV_FIELD(hailo_stream_parameters_t, direction),
             AISRV_FIELD(hailo_stream_parameters_t, flags)}};
  if (type == "hailo_stream_parameters_by_name_t")
    return {sizeof(abi::hailo_stream_parameters_by_name_t), alignof(abi::hailo_stream_parameters_by_name_t),
            {AISRV_FIELD(hailo_stream_parameters_by_name_t, name),
             AISRV_FIELD(hailo_stream_parameters_by_name_t, stream_params)}};
  if (type == "hailo_network_parameters_by_name_t")
    return {sizeof(abi::hailo_network_parameters_by_name_t), alignof(abi::hailo_network_parameters_by_name_t),
            {AISRV_FIELD(hailo_network_parameters_by_name_t, name),
             AISRV_FIELD(hailo_network_parameters_by_name_t, network_params)}};
  if (type == "hailo_configure_network_group_params_t")
    return {sizeof(abi::hailo_configure_network_group_params_t), alignof(abi::hailo_configure_network_group_params_t),
            {AISRV_FIELD(hailo_configure_network_group_params_t, name),
             AISRV_FIELD(hailo_configure_network_group_params_t, batch_size),
             AISRV_FIELD(hailo_configure_network_group_params_t, power_mode),
             AISRV_FIELD(hailo_configure_network_group_params_t, latency),
             AISRV_FIELD(hailo_configure_network_group_params_t, stream_params_by_name_count),
             AISRV_FIELD(hailo_configure_network_group_params_t, stream_params_by_name),
             AISRV_FIELD(hailo_configure_network_group_params_t, network_params_by_name_count),
             AISRV_FIELD(hailo_configure_network_group_params_t, network_params_by_name)}};
  if (type == "hailo_configure_params_t")
    return {sizeof(abi::hailo_configure_params_t), alignof(abi::hailo_configure_params_t),
            {AISRV_FIELD(hailo_configure_params_t, network_group_params_count),
             AISRV_FIELD(hailo_configure_params_t, network_group_params)}};
  if (type == "hailo_nms_defuse_info_t")
    return {sizeof(abi::hailo_nms_defuse_info_t), alignof(abi::hailo_nms_defuse_info_t),
            {AISRV_FIELD(hailo_nms_defuse_info_t, class_group_index),
             AISRV_FIELD(hailo_nms_defuse_info_t, original_name)}};
  if (type == "hailo_nms_info_t")
    return {sizeof(abi::hailo_nms_info_t), alignof(abi::hailo_nms_info_t),
            {AISRV_FIELD(hailo_nms_info_t, number_of_classes), AISRV_FIELD(hailo_nms_info_t, max_bboxes_per_class),
             AISRV_FIELD(hailo_nms_info_t, max_bboxes_total), AISRV_FIELD(hailo_nms_info_t, bbox_size),
             AISRV_FIELD(hailo_nms_info_t, chunks_per_frame), AISRV_FIELD(hailo_nms_info_t, is_defused),
             AISRV_FIELD(hailo_nms_info_t, defuse_info), AISRV_FIELD(hailo_nms_info_t, burst_size),
             AISRV_FIELD(hailo_nms_info_t, burst_type)}};
  if (type == "hailo_stream_info_t") {
    // the anonymous struct of the union is named `shapes` in our declaration
    using S = abi::hailo_stream_info_t;
    return {sizeof(S), alignof(S),
            {Field{"shape", offsetof(S, shapes) + offsetof(decltype(S::shapes), shape), sizeof(S::shapes.shape)},
             Field{"hw_shape", offsetof(S, shapes) + offsetof(decltype(S::shapes), hw_shape),
                   sizeof(S::shapes.hw_shape)},
             AISRV_FIELD(hailo_stream_info_t, nms_info), AISRV_FIELD(hailo_stream_info_t, hw_data_bytes),
             AISRV_FIELD(hailo_stream_info_t, hw_frame_size), AISRV_FIELD(hailo_stream_info_t, format),
             AISRV_FIELD(hailo_stream_info_t, direction), AISRV_FIELD(hailo_stream_info_t, index),
             AISRV_FIELD(hailo_stream_info_t, name), AISRV_FIELD(hailo_stream_info_t, quant_info),
             AISRV_FIELD(hailo_stream_info_t, is_mux)}};
  }
  if (type == "hailo_transform_params_t")
    return {sizeof(abi::hailo_transform_params_t), alignof(abi::hailo_transform_params_t),
            {AISRV_FIELD(hailo_transform_params_t, transform_mode),
             AISRV_FIELD(hailo_transform_params_t, user_buffer_format)}};
  if (type == "hailo_network_group_info_t")
    return {sizeof(abi::hailo_network_group_info_t), alignof(abi::hailo_network_group_info_t),
            {AISRV_FIELD(hailo_network_group_info_t, name), AISRV_FIELD(hailo_network_group_info_t, is_multi_context)}};
  FAIL("no measurement for " << type);
  return {};
}
#undef AISRV_FIELD

}  // namespace

TEST_CASE("every struct the engine or verify-hailort passes to libhailort matches HailoRT 4.21-4.23 field by field") {
  size_t fields = 0;
  for (const Layout& want : layouts_4_21_to_4_23()) {
    CAPTURE(want.type);
    const Measured got = measured(want.type);
    CHECK(got.size == want.size);
    CHECK(got.align == want.align);
    REQUIRE(got.fields.size() == want.fields.size());
    for (size_t i = 0; i < want.fields.size(); ++i) {
      CAPTURE(want.fields[i].name);
      CHECK(std::string(got.fields[i].name) == want.fields[i].name);
      CHECK(got.fields[i].offset == want.fields[i].offset);
      CHECK(got.fields[i].size == want.fields[i].size);
      ++fields;
    }
  }
  CHECK(fields == 56 + 2 + 9 + 11 + 2 + 2);  // every transcribed field was compared
  for (uint32_t minor : {21u, 22u, 23u}) CHECK(layout_supported({4, minor, 0}));
}

TEST_CASE("HailoRT 4.20's hailo_nms_shape_t differs from the declared one: the loader refuses 4.20") {
  const Measured ours = measured("hailo_nms_shape_t");
  CHECK(ours.size == kNmsShape_4_20.size);  // same size, so nothing but the loader's version check can tell them apart
  CHECK(ours.fields[2].offset == 8);                    // ours: max_bboxes_total at 8
  CHECK(kNmsShape_4_20.fields[2].offset == 8);          // 4.20: max_accumulated_mask_size at 8
  CHECK(std::string(ours.fields[2].name) != kNmsShape_4_20.fields[2].name);
  CHECK_FALSE(layout_supported({4, 20, 0}));
  CHECK_FALSE(layout_supported({4, 20, 1}));
  CHECK_FALSE(layout_supported({4, 19, 0}));
}
