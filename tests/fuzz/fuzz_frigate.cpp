// aisrv fuzzing — Frigate's detector messages (phy/frigate): the first byte chooses how many parts a message has
// (1 to 3) and the next bytes each part's length; parse_message() must classify any parts as a model request, a
// model file, a detection request or a bad message (never throw, never read outside the parts), a detection
// request's byte count must match its shape, and the rows filled from detections made of the remaining bytes
// (NaN, infinities, inverted boxes) stay normalised to 0..1 in score order.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <variant>
#include <vector>

#include "frigate_messages.hpp"
#include "frigate_rows.hpp"

namespace {

double take_double(const uint8_t*& p, size_t& n) {
  double v = 0;
  if (n >= sizeof v) {
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    n -= sizeof v;
  }
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aisrv::phy::frigate;
  if (size < 1) return 0;
  const size_t count = 1 + data[0] % 3;
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  std::vector<std::span<const uint8_t>> parts;
  for (size_t i = 0; i < count; ++i) {
    size_t len = n;
    if (i + 1 < count) {
      len = n >= 2 ? std::min<size_t>(n - 2, size_t{p[0]} | size_t{p[1]} << 8) : 0;
      p += std::min<size_t>(n, 2);
      n -= std::min<size_t>(n, 2);
    }
    parts.emplace_back(p, len);
    p += len;
    n -= len;
  }
  const Message m = parse_message(parts);
  if (const auto* d = std::get_if<DetectRequest>(&m)) {
    if (static_cast<uint64_t>(d->height) * d->width * d->channels != d->pixels.size()) std::abort();
    if (d->dtype != "uint8") std::abort();
  }

  // Rows from detections made of the last part's bytes.
  const uint8_t* q = parts.back().data();
  size_t left = parts.back().size();
  std::vector<aisrv::results::Detection> detections;
  while (left >= 5 * sizeof(double) && detections.size() < 64) {
    aisrv::results::Detection det;
    det.class_id = static_cast<int32_t>(q[0]);
    det.score = take_double(q, left);
    det.box = {take_double(q, left), take_double(q, left), take_double(q, left), take_double(q, left)};
    detections.push_back(det);
  }
  Rows rows;
  const size_t filled = fill_rows(detections, 640, 480, 0.25f, rows);
  if (filled > kRows) std::abort();
  for (size_t r = 0; r < kRows; ++r) {
    const float* row = &rows[r * kRowValues];
    for (size_t c = 2; c < kRowValues; ++c)
      if (!(row[c] >= 0.0f && row[c] <= 1.0f)) std::abort();  // also catches NaN
    if (r >= filled)
      for (size_t c = 0; c < kRowValues; ++c)
        if (row[c] != 0.0f) std::abort();
    if (r > 0 && r < filled && row[1] > rows[(r - 1) * kRowValues + 1]) std::abort();
    if (r < filled && !(row[1] >= 0.25f)) std::abort();
  }
  (void)model_request_reply(true, false);
  return 0;
}
