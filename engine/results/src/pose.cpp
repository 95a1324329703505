// aisrv results — single-pose keypoints (MoveNet [1,1,K,3]: y, x, score per keypoint, normalised to the input),
// every keypoint reported in model order (the threshold does not remove any, so indices stay those of
// coco_skeleton()); COCO names for 17 keypoints, else "k<index>". A non-finite value is an error.
#include <array>
#include <cmath>

#include "decoders.hpp"

namespace aisrv::results {
namespace {

constexpr std::array<const char*, 17> kCocoKeypoints = {
    "nose",      "left_eye",   "right_eye",   "left_ear",   "right_ear",   "left_shoulder",
    "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
    "right_hip", "left_knee",  "right_knee",  "left_ankle", "right_ankle"};

constexpr std::array<std::pair<int, int>, 18> kCocoSkeleton = {{
    {0, 1}, {0, 2}, {1, 3}, {2, 4},                    // face
    {0, 5}, {0, 6}, {5, 6},                            // head to shoulders
    {5, 7}, {7, 9}, {6, 8}, {8, 10},                   // arms
    {5, 11}, {6, 12}, {11, 12},                        // torso
    {11, 13}, {13, 15}, {12, 14}, {14, 16},            // legs
}};

}  // namespace

std::span<const std::pair<int, int>> coco_skeleton() { return kCocoSkeleton; }

namespace detail {

Status decode_pose(const Context& c, Decoded& out) {
  const Tensor& t = c.tensors[c.plan.output];
  const size_t k = static_cast<size_t>(t.info().shape[2]);
  const Frame frame = AISRV_TRY(make_frame(c.model, c.options));
  for (size_t i = 0; i < k; ++i) {
    const double y = t.at(i * 3), x = t.at(i * 3 + 1), score = t.at(i * 3 + 2);
    if (!std::isfinite(x) || !std::isfinite(y) || !std::isfinite(score))
      return make_error(Errc::invalid_argument, "keypoint {} has a value that is not finite", i);
    Keypoint p;
    p.name = k == kCocoKeypoints.size() ? kCocoKeypoints[i] : fmt::format("k{}", i);
    p.x = frame.x(x * frame.input_width);
    p.y = frame.y(y * frame.input_height);
    p.score = score;
    out.keypoints.push_back(std::move(p));
  }
  return ok();
}

}  // namespace detail
}  // namespace aisrv::results
