// aisrv tests — the HEF reader on synthetic HEFs built in the test: the parse-hef text for layouts the real test
// files do not cover (multi-network groups, several groups, multi-context, transposed nets, core HW padding, mux
// layers, on-chip NMS with and without burst, per-feature quantization, net-flow YOLOv8 and argmax ops), with every
// expected line derived by hand from hailo8-facts.md §1.5-1.6, and the errors for out-of-range fields.
#include <doctest/doctest.h>

#include <random>

#include "aisrv/engine/hailo8/hef/describe.hpp"
#include "aisrv/engine/hailo8/hef/reader.hpp"
#include "hef_builder.hpp"

using namespace aisrv;
using namespace aisrv::engine::hailo8;
namespace th = aisrv::test::hef;
using th::EdgeSpec;

namespace {

hef::Hef read_ok(const th::pb::File& f, uint32_t version = 0) {
  auto bytes = th::container(version, f);
  auto r = hef::read_hef(bytes);
  if (!r) FAIL(r.error().message);
  return std::move(*r);
}

std::string text_of(const th::pb::File& f, bool streams = false) {
  auto h = read_ok(f);
  hef::DescribeOptions o;
  o.streams = streams;
  auto t = hef::describe(h, o);
  if (!t) FAIL(t.error().message);
  return *t;
}

std::string error_of(const th::pb::File& f) {
  auto bytes = th::container(0, f);
  auto r = hef::read_hef(bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::model_error);
  return r.error().message;
}

th::pb::NmsInfo* nms_of(th::pb::EdgeLayer* e) { return e->mutable_info()->mutable_base()->mutable_additional()->mutable_nms(); }

}  // namespace

TEST_CASE("a minimal HEF: header facts and the parse-hef text") {
  auto f = th::simple_file("net");
  const auto h = read_ok(f, 2);
  CHECK(h.container.version == 2);
  CHECK(h.hw_arch == hef::HwArch::hailo8p);
  CHECK(h.device_arch() == hef::DeviceArch::hailo8);
  CHECK(h.sdk_version == "3.27.0");
  CHECK(h.periph_calculation_in_hailort);
  CHECK(h.unsupported_extensions.empty());
  CHECK(text_of(f) ==
        "Architecture HEF was compiled for: HAILO8\n"
        "Network group name: net, Single Context\n"
        "    Network name: net/net\n"
        "        VStream infos:\n"
        "            Input  net/input_layer1 UINT8, NC(16)\n"
        "            Output net/fc1 UINT8, NC(10)\n");
  // Stream lines print the hardware (padded) shape; stream infos come before vstream infos.
  CHECK(text_of(f, true) ==
        "Architecture HEF was compiled for: HAILO8\n"
        "Network group name: net, Single Context\n"
        "    Network name: net/net\n"
        "        Stream infos:\n"
        "            Input  net/input_layer1 UINT8, NC(16)\n"
        "            Output net/fc1 UINT8, NC(16)\n"
        "        VStream infos:\n"
        "            Input  net/input_layer1 UINT8, NC(16)\n"
        "            Output net/fc1 UINT8, NC(10)\n");
}

TEST_CASE("architectures map to device families; unknown ones are refused") {
  auto f = th::simple_file();
  f.mutable_header()->set_hw_arch(3);  // HAILO8L: single layout is not enough, it needs partial groups
  CHECK(error_of(f).find("no partial layouts") != std::string::npos);
  f.mutable_header()->set_hw_arch(103);
  CHECK(read_ok(f).device_arch() == hef::DeviceArch::hailo15h);
  CHECK(text_of(f).rfind("Architecture HEF was compiled for: HAILO15H\n", 0) == 0);
  f.mutable_header()->set_hw_arch(77);
  CHECK(error_of(f).find("hw_arch 77 is not a known Hailo architecture") != std::string::npos);
  CHECK(hef::runs_on_hailo8(hef::HwArch::hailo8p));
  CHECK(hef::runs_on_hailo8(hef::HwArch::hailo8l));
  CHECK_FALSE(hef::runs_on_hailo8(hef::HwArch::hailo15h));
  CHECK_FALSE(hef::runs_on_hailo8(hef::HwArch::hailo8));  // HailoRT's is_hef_compatible refuses plain HAILO8
}

TEST_CASE("HAILO8L HEFs describe the partial layout with the smallest cluster bitmap") {
  auto f = th::make_file(3);
  auto* g = f.add_network_groups();
  for (uint32_t bitmap : {204u, 51u}) {
    auto* p = g->add_partial_groups();
    p->mutable_layout()->set_clusters_bitmap(bitmap);
    auto* pg = p->mutable_group();
    pg->mutable_metadata()->set_name("m");
    pg->add_contexts();
    add_edge(pg, EdgeSpec{.name = "m/in", .direction = 0, .h = 4, .w = 4, .f = 3});
    add_edge(pg, EdgeSpec{.name = "m/out", .direction = 1, .f = bitmap == 51 ? 2u : 4u, .format = 2});
  }
  const auto h = read_ok(f);
  REQUIRE(h.network_groups.size() == 1);
  CHECK(h.network_groups[0].layout_bitmap == 51u);
  CHECK(text_of(f) ==
        "Architecture HEF was compiled for: HAILO8L\n"
        "Network group name: m, Single Context\n"
        "    Network name: m/m\n"
        "        VStream infos:\n"
        "            Input  m/in UINT8, NHWC(4x4x3)\n"
        "            Output m/out UINT8, NC(2)\n");
}

TEST_CASE("networks of a multi-network group are listed with their own layers") {
  auto f = th::make_file();
  th::add_extension(f, 8, true);  // MULTI_NETWORK_VARIABLE_BATCH_SIZE (optional)
  auto* g = th::add_group(f, "mn");
  g->add_network_names("a");
  g->add_network_names("b");
  add_edge(g, EdgeSpec{.name = "a/in", .direction = 0, .f = 4, .format = 2, .network_index = 0});
  add_edge(g, EdgeSpec{.name = "b/in", .direction = 0, .f = 6, .format = 2, .network_index = 1});
  add_edge(g, EdgeSpec{.name = "b/out", .direction = 1, .f = 2, .format = 2, .network_index = 1});
  add_edge(g, EdgeSpec{.name = "a/out", .direction = 1, .f = 3, .format = 2, .network_index = 0});
  CHECK(text_of(f) ==
        "Architecture HEF was compiled for: HAILO8\n"
        "Network group name: mn, Single Context\n"
        "    Network name: mn/a\n"
        "        VStream infos:\n"
        "            Input  a/in UINT8, NC(4)\n"
        "            Output a/out UINT8, NC(3)\n"
        "    Network name: mn/b\n"
        "        VStream infos:\n"
        "            Input  b/in UINT8, NC(6)\n"
        "            Output b/out UINT8, NC(2)\n");
  const auto h = read_ok(f);
  auto all = hef::output_vstream_infos(h.network_groups[0]);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].name == "b/out");  // sorted output order of the group
  CHECK((*all)[0].network_name == "mn/b");

  // Without the optional extension every layer belongs to the default network "<group>/<group>".
  f.clear_optional_extensions();
  CHECK(text_of(f).find("    Network name: mn/mn\n") != std::string::npos);

  // A network index beyond the group's networks is out of range.
  th::add_extension(f, 8, true);
  g->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(0)->set_network_index(5);
  CHECK(error_of(f).find("network_index 5 out of range (2 networks") != std::string::npos);
}

TEST_CASE("network groups are listed by name, with their context count") {
  auto f = th::make_file();
  auto* z = th::add_group(f, "zeta", 3);
  add_edge(z, EdgeSpec{.name = "zeta/in", .direction = 0, .f = 8, .format = 2}, 0);
  add_edge(z, EdgeSpec{.name = "zeta/out", .direction = 1, .f = 8, .format = 2}, 2);
  auto* a = th::add_group(f, "alpha");
  add_edge(a, EdgeSpec{.name = "alpha/in", .direction = 0, .h = 2, .w = 3, .f = 4, .format = 5});  // NHW
  add_edge(a, EdgeSpec{.name = "alpha/out", .direction = 1, .h = 2, .w = 3, .f = 4, .format = 3});  // FCR
  CHECK(text_of(f) ==
        "Architecture HEF was compiled for: HAILO8\n"
        "Network group name: alpha, Single Context\n"
        "    Network name: alpha/alpha\n"
        "        VStream infos:\n"
        "            Input  alpha/in UINT8, NHW(2x3)\n"
        "            Output alpha/out UINT8, FCR(2x3x4)\n"
        "Network group name: zeta, Multi Context - Number of contexts: 3\n"
        "    Network name: zeta/zeta\n"
        "        VStream infos:\n"
        "            Input  zeta/in UINT8, NC(8)\n"
        "            Output zeta/out UINT8, NC(8)\n");

  auto dup = th::make_file();
  th::add_group(dup, "same")->CopyFrom(f.network_groups(1));
  dup.mutable_network_groups(0)->mutable_metadata()->set_name("same");
  dup.add_network_groups()->CopyFrom(dup.network_groups(0));
  CHECK(error_of(dup).find("two network groups named 'same'") != std::string::npos);
}

TEST_CASE("HEF format numbers map to device orders (the one parser of them; the transforms use its result)") {
  // facts §1.5: 0 NHWC, 1 NHCW, 2 NC, 3 FCR, 4 BAYER_RGB, 5 NHW, 7 F8CR, 8 RGB888, 11 YUY2, 13 NHWC, 14 YYUV,
  // 15 YYVU, 16 YYYYUV; 6 is on-chip NMS (its own test); anything else is refused.
  const std::vector<std::pair<uint32_t, hef::FormatOrder>> cases = {
      {0, hef::FormatOrder::nhwc},  {1, hef::FormatOrder::nhcw},      {2, hef::FormatOrder::nc},
      {3, hef::FormatOrder::fcr},   {4, hef::FormatOrder::bayer_rgb}, {5, hef::FormatOrder::nhw},
      {7, hef::FormatOrder::f8cr},  {8, hef::FormatOrder::rgb888},    {11, hef::FormatOrder::yuy2},
      {13, hef::FormatOrder::nhwc}, {14, hef::FormatOrder::yyuv},     {15, hef::FormatOrder::yyvu},
      {16, hef::FormatOrder::yyyyuv}};
  for (const auto& [format, order] : cases) {
    INFO("format " << format);
    auto f = th::make_file();
    auto* g = th::add_group(f, "o");
    add_edge(g, EdgeSpec{.name = "o/in", .direction = 0, .f = 8, .format = 2});
    add_edge(g, EdgeSpec{.name = "o/out", .direction = 1, .h = 2, .w = 4, .f = format == 5 ? 1u : 8u,
                         .format = format});
    const auto h = read_ok(f);
    CHECK(h.network_groups[0].output_layers[0].device_order == order);
  }
  for (uint32_t bad : {9u, 10u, 12u, 17u, 1000u}) {
    auto f = th::make_file();
    auto* g = th::add_group(f, "o");
    add_edge(g, EdgeSpec{.name = "o/in", .direction = 0, .f = 8, .format = 2});
    add_edge(g, EdgeSpec{.name = "o/out", .direction = 1, .f = 8, .format = bad});
    CHECK(error_of(f) == "edge layer 'o/out': format " + std::to_string(bad) + " is not a known device format order");
  }
}

TEST_CASE("transposed nets swap height and width except for NC; UINT16 layers") {
  auto f = th::make_file();
  auto* g = th::add_group(f, "t");
  g->mutable_metadata()->set_transposed_net(true);
  add_edge(g, EdgeSpec{.name = "t/in", .direction = 0, .h = 4, .w = 8, .f = 3});
  add_edge(g, EdgeSpec{.name = "t/out", .direction = 1, .h = 2, .w = 5, .f = 7, .format = 3, .data_bytes = 2});
  add_edge(g, EdgeSpec{.name = "t/nc", .direction = 1, .f = 9, .format = 2});
  CHECK(text_of(f).find("            Input  t/in UINT8, NHWC(8x4x3)\n"
                        "            Output t/out UINT16, FCR(5x2x7)\n"
                        "            Output t/nc UINT8, NC(9)\n") != std::string::npos);
  const auto h = read_ok(f);
  CHECK(h.network_groups[0].input_layers[0].transposed);
  CHECK(h.network_groups[0].output_layers[0].type == hef::FormatType::uint16);
}

TEST_CASE("core HW padding applies to boundary NHCW layers unless the HEF pads in the DFC") {
  auto f = th::make_file();
  auto* g = th::add_group(f, "p");
  // core_buffers_per_frame == height, width*features % 8 == 0, row below 64 KiB: hw_shape = shape.
  add_edge(g, EdgeSpec{.name = "p/in", .direction = 0, .h = 20, .w = 20, .f = 64, .pw = 24, .format = 1});
  add_edge(g, EdgeSpec{.name = "p/out", .direction = 1, .h = 10, .w = 10, .f = 3, .pw = 16, .format = 1});
  CHECK(text_of(f, true).find("            Input  p/in UINT8, NHCW(20x20x64)\n"
                              "            Output p/out UINT8, NHCW(10x16x3)\n") != std::string::npos);
  th::add_extension(f, 11, true);  // HW_PADDING optional extension: the DFC did it, the padded shape stands
  CHECK(text_of(f, true).find("            Input  p/in UINT8, NHCW(20x24x64)\n") != std::string::npos);
  // Host side is NHWC with the unpadded shape either way.
  CHECK(text_of(f).find("            Input  p/in UINT8, NHWC(20x20x64)\n") != std::string::npos);
}

TEST_CASE("mux layers show as one stream and one vstream per demuxed part") {
  auto f = th::make_file();
  auto* g = th::add_group(f, "x");
  add_edge(g, EdgeSpec{.name = "x/in", .direction = 0, .f = 8, .format = 2});
  auto* e = g->mutable_contexts(0)->mutable_metadata()->add_edge_layers();
  e->set_direction(1);
  e->set_kind(1);
  auto* mux = e->mutable_mux();
  mux->set_name("x/mux");
  auto* b = mux->mutable_base();
  b->set_height(1);
  b->set_width(1);
  b->set_features(12);
  b->set_padded_height(1);
  b->set_padded_width(1);
  b->set_padded_features(16);
  b->set_format(2);
  b->set_data_bytes(1);
  mux->mutable_mux_data()->set_predecessor_count(2);
  th::fill_info(mux->add_predecessors()->mutable_info(), EdgeSpec{.name = "x/p1", .f = 5, .format = 2});
  th::fill_info(mux->add_predecessors()->mutable_info(), EdgeSpec{.name = "x/p2", .f = 7, .format = 2});
  g->add_sorted_outputs("x/p2");
  g->add_sorted_outputs("x/p1");
  CHECK(text_of(f, true).find("        Stream infos:\n"
                              "            Input  x/in UINT8, NC(8)\n"
                              "            Output x/mux UINT8, NC(16)\n"
                              "        VStream infos:\n"
                              "            Input  x/in UINT8, NC(8)\n"
                              "            Output x/p2 UINT8, NC(7)\n"
                              "            Output x/p1 UINT8, NC(5)\n") != std::string::npos);
  mux->mutable_mux_data()->set_predecessor_count(3);
  CHECK(error_of(f).find("number_of_predecessors 3 but 2 predecessors present") != std::string::npos);
}

// An HEF with one on-chip NMS output (80 classes, 100 boxes per class, 8-byte boxes).
th::pb::File nms_file(uint64_t division, bool burst, uint32_t burst_size, uint32_t burst_type) {
  auto f = th::make_file();
  if (burst) th::add_extension(f, 19);
  auto* g = th::add_group(f, "det");
  add_edge(g, EdgeSpec{.name = "det/in", .direction = 0, .h = 8, .w = 8, .f = 3});
  auto* e = add_edge(g, EdgeSpec{.name = "det/nms1", .direction = 1, .format = 6, .scale = 0.5f});
  auto* n = nms_of(e);
  n->set_classes(80);
  n->set_max_boxes_per_class(100);
  n->set_bbox_size(8);
  n->set_division_factor(division);
  n->set_burst_size(burst_size);
  n->set_burst_type(burst_type);
  return f;
}

TEST_CASE("on-chip NMS: host and hardware frame sizes from the facts' formulas") {
  auto make = nms_file;
  // 80 classes x (1 + 5 x 100) x 4 = 160320 (the public yolov8s example); hw: 1 x 80 x (2 + 8 x 100) + 8 x 1.
  const auto plain = text_of(make(0, false, 0, 0), true);
  CHECK(plain.find("            Output det/nms1 UINT8, HAILO NMS ON CHIP(maximum frame size: 64168)\n") !=
        std::string::npos);
  CHECK(plain.find("            Output det/nms1 FLOAT32, HAILO NMS BY CLASS(number of classes: 80, maximum bounding "
                   "boxes per class: 100, maximum frame size: 160320)\n") != std::string::npos);
  // Two chunks per frame: 200 boxes per class on the host, 2 x 80 x 802 + 8 on the device.
  const auto chunks = text_of(make(2, false, 0, 0), true);
  CHECK(chunks.find("maximum frame size: 128328)") != std::string::npos);
  CHECK(chunks.find("maximum bounding boxes per class: 200, maximum frame size: 320320)") != std::string::npos);
  // Burst per class of 120 boxes: 80 x (2 + 8 x 120) + 8 x 120.
  CHECK(text_of(make(1, true, 120, 1), true).find("HAILO NMS ON CHIP(maximum frame size: 77920)") !=
        std::string::npos);
  // Hailo-8 accepts only the per-class burst type; burst types without the extension are invalid.
  CHECK(error_of(make(1, true, 120, 2)).find("burst_type 2 is not supported on HAILO8P") != std::string::npos);
  CHECK(error_of(make(1, false, 0, 1)).find("no NMS burst extension") != std::string::npos);
  CHECK(error_of(make(1, true, 10000, 1)).find("exceeds the maximum 65536") != std::string::npos);

  const auto h = read_ok(make(1, false, 0, 0));
  const auto& layer = h.network_groups[0].output_layers[0];
  REQUIRE(layer.nms);
  CHECK(layer.nms->burst_type == hef::NmsBurstType::h8_bbox);
  CHECK(layer.nms->chunks_per_frame == 1);
  CHECK(layer.shape == hef::Shape{80, 5, 100});  // classes x 5 x (max boxes x division factor)
  CHECK(layer.quant_per_feature.size() == 1);
}

TEST_CASE("per-feature output quantization zeroes the per-tensor values") {
  auto f = th::make_file();
  th::add_extension(f, 25);
  auto* g = th::add_group(f, "q");
  add_edge(g, EdgeSpec{.name = "q/in", .direction = 0, .f = 3, .format = 2});
  auto* out = add_edge(g, EdgeSpec{.name = "q/out", .direction = 1, .f = 3, .format = 2, .scale = 9.0f});
  auto* n = out->mutable_info()->mutable_numeric();
  for (double z : {1.0, 2.0, 3.0}) n->add_zero_points(z);
  for (double s : {0.5, 0.25, 0.125}) n->add_scales(s);
  const auto h = read_ok(f);
  auto outs = hef::output_vstream_infos(h.network_groups[0]);
  REQUIRE(outs.ok());
  const auto& v = outs->front();
  CHECK(v.quant_is_per_feature);
  CHECK(v.quant.scale == 0.0f);
  REQUIRE(v.quant_per_feature.size() == 3);
  CHECK(v.quant_per_feature[1].zero_point == 2.0f);
  CHECK(v.quant_per_feature[2].scale == 0.125f);
  n->mutable_scales()->RemoveLast();
  CHECK(error_of(f).find("per-feature quantization has 3 zero points and 2 scales, 3 expected") != std::string::npos);
}

// A net-flow HEF: core op with an NHCW input and two outputs feeding a YOLOv8 NMS op through pads.
th::pb::File yolov8_file() {
  auto f = th::make_file();
  th::add_extension(f, 13);  // HAILO_NET_FLOW
  auto* g = f.add_network_groups();
  g->mutable_metadata()->set_name("y");
  g->add_sorted_outputs("y/nms");
  auto* core = g->add_ops()->mutable_core_op();
  core->mutable_metadata()->set_name("y");
  auto* ctx = core->add_contexts()->mutable_metadata();
  auto edge = [&](const EdgeSpec& s, int pad) {
    auto* e = ctx->add_edge_layers();
    e->set_direction(s.direction);
    th::fill_info(e->mutable_info(), s);
    if (pad) e->set_pad_index(static_cast<uint32_t>(pad));
  };
  edge(EdgeSpec{.name = "y/input_layer1", .direction = 0, .h = 64, .w = 64, .f = 3, .format = 1}, 0);
  edge(EdgeSpec{.name = "y/reg", .direction = 1, .h = 8, .w = 8, .f = 64, .format = 1}, 1);
  edge(EdgeSpec{.name = "y/cls", .direction = 1, .h = 8, .w = 8, .f = 5, .format = 1}, 2);
  auto* op = g->add_ops();
  op->set_name("y/yolov8_nms_postprocess");
  op->add_input_pads()->set_index(3);
  op->add_input_pads()->set_index(4);
  op->add_output_pads()->set_name("y/nms");
  auto* nms = op->mutable_nms_op();
  nms->set_score_threshold(0.25);
  nms->set_iou_threshold(0.45);
  nms->set_max_proposals_per_class(10);
  nms->set_classes(5);
  auto* v8 = nms->mutable_yolov8();
  v8->set_image_height(64);
  v8->set_image_width(64);
  v8->set_regression_length(16);
  auto* a = v8->add_anchors();
  a->set_stride(8);
  a->set_reg_pad_index(1);
  a->set_cls_pad_index(2);
  for (auto [src, dst] : {std::pair{1u, 3u}, std::pair{2u, 4u}}) {
    auto* pe = g->add_pad_edges();
    pe->set_src(src);
    pe->set_dst(dst);
  }
  return f;
}

TEST_CASE("net-flow: a YOLOv8 NMS op replaces the core outputs it consumes") {
  const auto f = yolov8_file();
  // 5 x (1 + 5 x 10) x 4 = 1020 bytes.
  CHECK(text_of(f) ==
        "Architecture HEF was compiled for: HAILO8\n"
        "Network group name: y, Single Context\n"
        "    Network name: y/y\n"
        "        VStream infos:\n"
        "            Input  y/input_layer1 UINT8, NHWC(64x64x3)\n"
        "            Output y/nms FLOAT32, HAILO NMS BY CLASS(number of classes: 5, maximum bounding boxes per "
        "class: 10, maximum frame size: 1020)\n"
        "            Operation:\n"
        "                Op YOLOV8\n"
        "                Name: YOLOV8-Post-Process\n"
        "                Score threshold: 0.250\n"
        "                IoU threshold: 0.45\n"
        "                Classes: 5\n"
        "                Max bboxes per class: 10\n"
        "                Image height: 64\n"
        "                Image width: 64\n");
  const auto h = read_ok(f);
  const auto& o = h.network_groups[0].ops.at(0);
  CHECK(o.regression_length == 16);
  CHECK(o.input_names == std::vector<std::string>{"y/reg", "y/cls"});

  // An op input pad that no pad edge feeds is named.
  auto broken = f;
  broken.mutable_network_groups(0)->mutable_pad_edges(1)->set_dst(9);
  CHECK(error_of(broken).find("input pad 4 is not connected to the core op") != std::string::npos);
  // A decoder pointing at a pad no core output feeds.
  auto broken2 = f;
  broken2.mutable_network_groups(0)->mutable_ops(1)->mutable_nms_op()->mutable_yolov8()->mutable_anchors(0)->set_cls_pad_index(7);
  CHECK(error_of(broken2).find("refers to pad 7") != std::string::npos);
  // A net-flow group without a core op.
  auto broken3 = f;
  broken3.mutable_network_groups(0)->mutable_ops()->DeleteSubrange(0, 1);
  CHECK(error_of(broken3).find("has no core op") != std::string::npos);

  // Argmax logits op instead: UINT8 NHW(8x8) from an NHCW input, description split at ", ".
  auto arg = f;
  auto* ag = arg.mutable_network_groups(0);
  ag->clear_sorted_outputs();
  ag->add_sorted_outputs("y/argmax");
  ag->add_sorted_outputs("y/reg");
  auto* lop = ag->mutable_ops(1);
  lop->Clear();
  lop->set_name("y/argmax_op");
  lop->add_input_pads()->set_index(4);
  lop->add_output_pads()->set_name("y/argmax");
  lop->mutable_logits_op()->set_type(0);
  CHECK(text_of(arg).find("            Output y/argmax UINT8, NHW(8x8)\n"
                          "            Output y/reg UINT8, NHWC(8x8x64)\n"
                          "            Operation:\n"
                          "                ARGMAX Op\n"
                          "                Name: Argmax-Post-Process\n") != std::string::npos);
}

TEST_CASE("outputs missing from the sorted order, or duplicated names, are errors") {
  auto f = th::simple_file("s");
  f.mutable_network_groups(0)->clear_sorted_outputs();
  f.mutable_network_groups(0)->add_sorted_outputs("s/other");
  CHECK(error_of(f).find("output 's/fc1' is not in the sorted output names") != std::string::npos);

  auto d = th::simple_file("s");
  add_edge(d.mutable_network_groups(0), EdgeSpec{.name = "s/fc1", .direction = 1, .f = 2, .format = 2});
  CHECK(error_of(d).find("layer name 's/fc1' appears more than once") != std::string::npos);
}

TEST_CASE("fields out of range are named with their values") {
  using Mut = void (*)(th::pb::EdgeLayer*);
  const std::pair<Mut, const char*> cases[] = {
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_sys_index(300); }, "sys_index 300 out of range"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_engine_id(256); }, "engine_id 256 out of range"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_data_bytes(3); }, "data_bytes 3 out of range"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_format(9); }, "format 9 is not a known"},
      {[](th::pb::EdgeLayer* e) { e->set_direction(2); }, "direction 2 out of range"},
      {[](th::pb::EdgeLayer* e) { e->set_kind(5); }, "edge layer type 5 out of range"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_core_bytes_per_buffer(70000); },
       "core_bytes_per_buffer 70000 out of range"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_core_buffers_per_frame(65536); },
       "core_buffers_per_frame 65536 out of range"},
      {[](th::pb::EdgeLayer* e) {
         auto* b = e->mutable_info()->mutable_base();
         b->set_padded_height(100000);
         b->set_padded_width(100000);
       },
       "is too big"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->mutable_base()->set_host_argmax(true); }, "legacy host argmax"},
      {[](th::pb::EdgeLayer* e) { e->mutable_info()->set_name(std::string(200, 'n')); }, "too long"},
      {[](th::pb::EdgeLayer* e) { e->mutable_switch_info()->set_connection(9); }, "connection type 9 out of range"},
      {[](th::pb::EdgeLayer* e) {
         e->mutable_info()->mutable_base()->set_format(6);
         e->mutable_info()->mutable_base()->mutable_additional()->mutable_nms()->set_classes(1ull << 40);
       },
       "number_of_classes 1099511627776 out of range"},
  };
  for (const auto& [mutate, expected] : cases) {
    auto f = th::simple_file("r");
    mutate(f.mutable_network_groups(0)->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(1));
    const auto msg = error_of(f);
    INFO(msg);
    CHECK(msg.find(expected) != std::string::npos);
  }

  auto no_header = th::simple_file();
  no_header.clear_header();
  CHECK(error_of(no_header).find("no header") != std::string::npos);
  auto no_groups = th::make_file();
  CHECK(error_of(no_groups).find("no network group") != std::string::npos);
  auto no_name = th::simple_file();
  no_name.mutable_network_groups(0)->mutable_metadata()->clear_name();
  CHECK(error_of(no_name).find("network group #0 has no name") != std::string::npos);
  auto no_ctx = th::simple_file("c");
  no_ctx.mutable_network_groups(0)->clear_contexts();
  CHECK(error_of(no_ctx).find("network group 'c' has no contexts") != std::string::npos);
}

TEST_CASE("JSON carries the container, header, streams and quantization") {
  auto f = th::simple_file("j");
  const auto h = read_ok(f, 1);
  auto j = hef::to_json(h);
  REQUIRE(j.ok());
  CHECK((*j)["container"]["version"] == 1);
  CHECK((*j)["container"]["checksum"]["kind"] == "CRC32");
  CHECK((*j)["hw_arch"] == "HAILO8P");
  CHECK((*j)["device_arch"] == "HAILO8");
  CHECK((*j)["runs_on_hailo8"] == true);
  const auto& net = (*j)["network_groups"][0]["networks"][0];
  CHECK(net["name"] == "j/j");
  CHECK(net["inputs"][0]["order"] == "NC");
  CHECK(net["inputs"][0]["frame_size"] == 16);
  CHECK(net["outputs"][0]["quant"]["zero_point"] == 3.0);
  CHECK(net["output_streams"][0]["hw_frame_size"] == 16);
  // The schema's names are proto3 strings, as in HailoRT's: a name that is not UTF-8 fails the protobuf parse.
  auto bad = th::simple_file("j");
  bad.mutable_network_groups(0)->mutable_contexts(0)->mutable_metadata()->mutable_edge_layers(0)->mutable_info()->set_name(
      "j/\xff\xfe");
  CHECK(error_of(bad).find("does not parse") != std::string::npos);
  // dump_json never throws on such bytes.
  nlohmann::json raw = {{"name", std::string("\xff")}};
  CHECK(hef::dump_json(raw).find("\xef\xbf\xbd") != std::string::npos);
}

TEST_CASE("mutated metadata-dense protobufs never crash the reader") {
  // Small synthetic HEFs are all metadata, so random edits hit the fields the reader interprets (the real HEFs are
  // mostly configuration data it skips; test_hef_mutations.cpp covers those).
  std::vector<std::vector<uint8_t>> corpus = {th::serialize(th::simple_file()), th::serialize(yolov8_file()),
                                              th::serialize(nms_file(2, true, 120, 1))};
  std::mt19937_64 rng(42);
  size_t accepted = 0, refused = 0;
  for (int i = 0; i < 1500; ++i) {
    auto proto = corpus[static_cast<size_t>(i) % corpus.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % proto.size();
      switch (rng() % 4) {
        case 0: proto[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 1: proto[at] = static_cast<uint8_t>(rng()); break;
        case 2: proto.erase(proto.begin() + static_cast<std::ptrdiff_t>(at)); break;
        default: proto.insert(proto.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>(rng())); break;
      }
      if (proto.empty()) proto.push_back(0);
    }
    const auto file = th::container(static_cast<uint32_t>(rng() % 4), proto);
    auto r = hef::read_hef(file);
    if (r.ok()) {
      ++accepted;
      CHECK(hef::describe(*r, {.streams = true}).ok());
      auto j = hef::to_json(*r);
      REQUIRE(j.ok());
      CHECK_FALSE(hef::dump_json(*j).empty());
    } else {
      ++refused;
      CHECK(r.error().code == Errc::model_error);
    }
  }
  MESSAGE("synthetic mutations: " << accepted << " parsed, " << refused << " refused");
  CHECK(accepted > 0);
  CHECK(refused > 0);
}
