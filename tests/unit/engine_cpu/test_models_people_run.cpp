// aisrv tests — what the models people run find in the test pictures, read through the result decoder as a user
// would (engine/results): YOLOv8n's people and kites in kite_and_cold.jpg and Grace Hopper in grace_hopper.bmp,
// DeepLab's dog in dog_segmentation.bmp against the published mask (mean IoU, the border class of the trimap
// ignored), MoveNet's keypoints on squat.bmp against Google's reference CSV, the traffic SSD's detections.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "aisrv/engine/cpu/cpu_backend.hpp"
#include "aisrv/results/results.hpp"
#include "model_cases.hpp"

using namespace aisrv;

namespace {

const std::string kCoral = "tflite/google-coral__test_data/";
const std::string kYolo = "tflite/sangho007__yolov8n/yolov8n_full_integer_quant.tflite";

struct Run {
  engine::ModelInfo info;
  std::vector<std::vector<uint8_t>> outputs;
  image::Image picture;
  image::Placement placement;
};

// Loads `model`, feeds `picture` (input 0; other inputs zeros) as `aisrv infer --image` does — with the model's
// own preprocessing hints from its metadata — and runs it with the optimised kernels.
Run run(const std::string& model, const std::string& picture) {
  auto backend = engine::cpu::CpuBackend::create({});
  REQUIRE(backend.ok());
  auto info = (*backend)->load(test::read_file(test::testdata_path(model)), {});
  REQUIRE_MESSAGE(info.ok(), (info.ok() ? "" : info.error().what()));
  Run r;
  r.info = *info;
  auto pic = image::read_image(test::testdata_path(picture).string());
  REQUIRE(pic.ok());
  r.picture = *pic;
  image::Preprocess pre;
  for (const auto& [k, v] : info->metadata) {
    if (k == "preprocess.fit" && v == "letterbox") pre.fit = image::Fit::letterbox;
    if (k == "preprocess.mean") pre.mean = {std::stof(v)};
    if (k == "preprocess.std") pre.std = {std::stof(v)};
  }
  auto geometry = image::input_geometry(info->inputs[0]);
  REQUIRE(geometry.ok());
  auto where = image::placement(r.picture, *geometry, pre);
  REQUIRE(where.ok());
  r.placement = *where;
  auto tensor = image::image_to_tensor(r.picture, info->inputs[0], pre);
  REQUIRE(tensor.ok());
  std::copy(tensor->begin(), tensor->end(), (*backend)->input(0).begin());
  for (size_t i = 1; i < info->inputs.size(); ++i) std::fill((*backend)->input(i).begin(), (*backend)->input(i).end(), 0);
  REQUIRE((*backend)->invoke({}).ok());
  for (size_t k = 0; k < info->outputs.size(); ++k) {
    const auto out = (*backend)->output(k);
    r.outputs.emplace_back(out.begin(), out.end());
  }
  return r;
}

results::Decoded decode(const Run& r, results::Options o = {}) {
  o.placement = r.placement;
  const results::ModelDescription model{r.info.inputs, r.info.outputs, r.info.metadata};
  auto found = results::decode(model, r.outputs, o);
  REQUIRE_MESSAGE(found.ok(), (found.ok() ? "" : found.error().what()));
  return *found;
}

size_t count(const results::Decoded& d, const std::string& label, double min_score) {
  return static_cast<size_t>(std::count_if(d.detections.begin(), d.detections.end(), [&](const auto& x) {
    return x.label == label && x.score >= min_score;
  }));
}

}  // namespace

TEST_CASE("YOLOv8n finds the people and kites of kite_and_cold.jpg, and Grace Hopper") {
  const Run kite = run(kYolo, kCoral + "kite_and_cold.jpg");
  const auto d = decode(kite);
  CHECK(d.task == results::Task::detection);
  CHECK(d.decoder == "yolov8");
  MESSAGE(d.detections.size() << " detections; strongest " << d.detections.at(0).label << " "
                              << d.detections.at(0).score);
  CHECK(count(d, "person", 0.5) >= 2);
  CHECK(count(d, "kite", 0.5) >= 2);
  for (const auto& x : d.detections) {
    CHECK(x.box.x0 >= 0);
    CHECK(x.box.y0 >= 0);
    CHECK(x.box.x1 <= kite.picture.width);
    CHECK(x.box.y1 <= kite.picture.height);
    if (x.label == "kite" && x.score >= 0.5) CHECK(x.box.y1 < kite.picture.height / 2.0);  // kites fly
    if (x.label == "person" && x.score >= 0.5) CHECK(x.box.y0 > kite.picture.height / 2.0);  // people on the beach
  }
  const Run grace = run(kYolo, kCoral + "grace_hopper.bmp");
  const auto g = decode(grace);
  REQUIRE_FALSE(g.detections.empty());
  CHECK(g.detections[0].label == "person");
  CHECK(g.detections[0].score >= 0.9);
  const auto& b = g.detections[0].box;
  CHECK((b.x1 - b.x0) * (b.y1 - b.y0) >= 0.6 * grace.picture.width * grace.picture.height);
}

TEST_CASE("DeepLab v3 segments the dog of dog_segmentation.bmp as the published mask does") {
  const Run r = run(kCoral + "deeplabv3_mnv2_dm05_pascal_quant.tflite", kCoral + "dog_segmentation.bmp");
  std::ifstream labels_file(test::testdata_path(kCoral + "pascal_voc_segmentation_labels.txt"));
  std::stringstream text;
  text << labels_file.rdbuf();
  results::Options o;
  o.labels = *results::parse_labels(text.str());
  const auto d = decode(r, o);
  REQUIRE(d.mask);
  CHECK(d.task == results::Task::segmentation);
  REQUIRE(d.mask->present.size() >= 2);
  const auto& top = d.mask->present[0].label == "background" ? d.mask->present[1] : d.mask->present[0];
  CHECK(top.label == "dog");
  // The mask is an Oxford-pets trimap (libcoral's U-Net test): 0 pet, 1 background, 2 border (left out, as its
  // evaluation does). The model's non-background classes are the pet.
  auto mask = image::read_image(test::testdata_path(kCoral + "dog_segmentation_mask.bmp").string());
  REQUIRE(mask.ok());
  REQUIRE(mask->width == r.picture.width);
  uint64_t pet_and = 0, pet_or = 0, bg_and = 0, bg_or = 0;
  for (uint32_t y = 0; y < mask->height; ++y)
    for (uint32_t x = 0; x < mask->width; ++x) {
      const uint8_t truth = mask->pixels[(static_cast<size_t>(y) * mask->width + x) * mask->channels];
      if (truth == 2) continue;
      const bool pet = results::class_at(*d.mask, x, y) != 0;
      pet_and += pet && truth == 0;
      pet_or += pet || truth == 0;
      bg_and += !pet && truth == 1;
      bg_or += !pet || truth == 1;
    }
  const double pet_iou = static_cast<double>(pet_and) / static_cast<double>(pet_or);
  const double bg_iou = static_cast<double>(bg_and) / static_cast<double>(bg_or);
  MESSAGE("DeepLab v3 on dog_segmentation.bmp: IoU pet " << pet_iou << ", background " << bg_iou << ", mean "
                                                         << (pet_iou + bg_iou) / 2);
  CHECK((pet_iou + bg_iou) / 2 >= 0.95);
}

TEST_CASE("MoveNet's keypoints on squat.bmp are Google's reference keypoints") {
  const Run r = run(kCoral + "movenet_single_pose_lightning_ptq.tflite", kCoral + "squat.bmp");
  const auto d = decode(r);
  CHECK(d.task == results::Task::pose);
  REQUIRE(d.keypoints.size() == 17);
  std::ifstream csv(test::testdata_path(kCoral + "movenet_single_pose_lightning_ptq_reference.csv"));
  std::string line;
  std::getline(csv, line);  // header: pose_id,pose_score,keypoint_id,keypoint_score,keypoint_x,keypoint_y
  double worst = 0, sum = 0;
  for (size_t k = 0; k < 17; ++k) {
    REQUIRE(std::getline(csv, line));
    std::vector<double> v;
    std::stringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stod(f));
    REQUIRE(v.size() == 6);
    const double dx = d.keypoints[k].x / r.picture.width - v[4], dy = d.keypoints[k].y / r.picture.height - v[5];
    const double dist = std::hypot(dx, dy);
    worst = std::max(worst, dist);
    sum += dist;
  }
  MESSAGE("MoveNet keypoints vs the reference CSV: largest distance " << worst << ", mean " << sum / 17
                                                                        << " (normalised)");
  CHECK(worst <= 0.03);
  CHECK(sum / 17 <= 0.015);
  CHECK(d.keypoints[0].name == "nose");
}

TEST_CASE("the traffic SSD's post-processed detections are read as boxes in the frame") {
  const Run r = run(kCoral + "automl_video_ondevice/traffic_model.tflite",
                    kCoral + "automl_video_ondevice/traffic_frames/0001.bmp");
  results::Options o;
  o.threshold = 0.3f;
  const auto d = decode(r, o);
  CHECK(d.decoder == "tflite_detection_postprocess");
  REQUIRE(d.detections.size() >= 2);
  for (size_t i = 1; i < d.detections.size(); ++i) CHECK(d.detections[i - 1].score >= d.detections[i].score);
  for (const auto& x : d.detections) {
    CHECK(x.box.x0 < x.box.x1);
    CHECK(x.box.y0 < x.box.y1);
    CHECK(x.box.x1 <= r.picture.width);
    CHECK(x.box.y1 <= r.picture.height);
  }
}
