// aisrv results — segmentation: a class index per cell of the model's output grid, either read (the argmax is in
// the model: [1,H,W] or [1,H,W,1], e.g. DeepLab's ARG_MAX) or computed from [1,H,W,C] scores (first maximum wins,
// NaN never does; a cell with only NaN scores gets -1 and counts for no class). The classes present are listed
// largest area first (equal areas: lower class first). class_at() maps a picture pixel to its mask cell.
#include <algorithm>
#include <cmath>
#include <map>

#include "decoders.hpp"

namespace aisrv::results {
namespace detail {

Status decode_segmentation(const Context& c, Decoded& out) {
  const Tensor& t = c.tensors[c.plan.output];
  const auto& s = t.info().shape;
  Segmentation m;
  m.height = static_cast<uint32_t>(s[1]);
  m.width = static_cast<uint32_t>(s[2]);
  const size_t cells = size_t{m.width} * m.height;
  m.classes.resize(cells, -1);
  if (c.plan.decoder == Decoder::class_mask) {
    for (size_t i = 0; i < cells; ++i) {
      auto cls = t.index_at(i);
      if (!cls)
        return make_error(Errc::invalid_argument, "mask cell ({}, {}) holds {}, not a class index", i % m.width,
                          i / m.width, t.at(i));
      m.classes[i] = *cls;
    }
  } else {
    const size_t depth = static_cast<size_t>(s[3]);
    for (size_t i = 0; i < cells; ++i) {
      double best = 0;
      for (size_t k = 0; k < depth; ++k) {
        const double v = t.at(i * depth + k);
        if (!std::isnan(v) && (m.classes[i] < 0 || v > best)) {
          m.classes[i] = static_cast<int32_t>(k);
          best = v;
        }
      }
    }
  }
  std::map<int32_t, uint64_t> area;
  for (int32_t cls : m.classes)
    if (cls >= 0) ++area[cls];
  for (const auto& [cls, pixels] : area)
    m.present.push_back(ClassArea{cls, label_of(c.labels, cls), pixels, double(pixels) / double(cells)});
  std::stable_sort(m.present.begin(), m.present.end(),
                   [](const ClassArea& a, const ClassArea& b) { return a.pixels > b.pixels; });
  if (c.options.placement) {
    m.placement = c.options.placement;
  } else if (!c.model.inputs.empty()) {  // no picture: the picture is the input itself
    if (auto g = image::input_geometry(c.model.inputs[0])) {
      image::Placement p;
      p.input_width = p.picture_width = g->width;
      p.input_height = p.picture_height = g->height;
      m.placement = p;
    }
  }
  out.mask = std::move(m);
  return ok();
}

}  // namespace detail

// The pixel's centre (x + 0.5, y + 0.5) goes through the placement to input coordinates, then to the cell that
// covers it (the mask spans the input). Without a placement (or one without an input size), coordinates are mask
// cells.
int32_t class_at(const Segmentation& mask, double picture_x, double picture_y) {
  if (mask.width == 0 || mask.height == 0 || mask.classes.size() != size_t{mask.width} * mask.height) return -1;
  double cx = picture_x + 0.5, cy = picture_y + 0.5;
  if (mask.placement && mask.placement->input_width > 0 && mask.placement->input_height > 0) {
    const auto& p = *mask.placement;
    const double ix = p.left + (cx - p.crop_x) * p.scale_x;
    const double iy = p.top + (cy - p.crop_y) * p.scale_y;
    cx = ix * mask.width / p.input_width;
    cy = iy * mask.height / p.input_height;
  }
  if (!(cx >= 0 && cy >= 0 && cx < mask.width && cy < mask.height)) return -1;
  const auto col = static_cast<size_t>(cx), row = static_cast<size_t>(cy);
  return mask.classes[row * mask.width + col];
}

}  // namespace aisrv::results
