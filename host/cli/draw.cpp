// aisrv CLI — drawing decoded results onto the picture with cairo (see draw.hpp).
#include "draw.hpp"

#include <cairo.h>
#include <fontconfig/fontconfig.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include <fmt/format.h>

namespace aisrv::cli {

namespace {

struct Rgb {
  double r = 0, g = 0, b = 0;
};

// A colour per class that stays apart from its neighbours: hues spread by the golden ratio.
Rgb class_colour(int32_t id) {
  const double h = std::fmod(0.11 + 0.618033988749895 * static_cast<double>(id < 0 ? -id : id), 1.0) * 6.0;
  const double x = 1.0 - std::fabs(std::fmod(h, 2.0) - 1.0);
  const std::array<Rgb, 6> sectors{Rgb{1, x, 0}, Rgb{x, 1, 0}, Rgb{0, 1, x}, Rgb{0, x, 1}, Rgb{x, 0, 1}, Rgb{1, 0, x}};
  const Rgb c = sectors[static_cast<size_t>(h) % 6];
  return {0.15 + 0.85 * c.r, 0.15 + 0.85 * c.g, 0.15 + 0.85 * c.b};
}

// Background classes are not painted over the picture: class 0 when it has no name or is called "background".
bool is_background(int32_t id, const std::string& label) {
  return label == "background" || (id == 0 && label.empty());
}

std::string label_text(int32_t id, const std::string& label) {
  return label.empty() ? fmt::format("class {}", id) : label;
}

struct SurfaceFree {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextFree {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};

// The picture as a cairo RGB24 surface (grey pictures become grey RGB).
std::unique_ptr<cairo_surface_t, SurfaceFree> picture_surface(const image::Image& p) {
  std::unique_ptr<cairo_surface_t, SurfaceFree> s(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(p.width), static_cast<int>(p.height)));
  if (cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS) return s;
  cairo_surface_flush(s.get());
  unsigned char* data = cairo_image_surface_get_data(s.get());
  const int stride = cairo_image_surface_get_stride(s.get());
  for (uint32_t y = 0; y < p.height; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + static_cast<size_t>(y) * static_cast<size_t>(stride));
    for (uint32_t x = 0; x < p.width; ++x) {
      const uint8_t* px = p.pixels.data() + (static_cast<size_t>(y) * p.width + x) * p.channels;
      const uint32_t r = px[0], g = p.channels == 3 ? px[1] : px[0], b = p.channels == 3 ? px[2] : px[0];
      row[x] = (r << 16) | (g << 8) | b;
    }
  }
  cairo_surface_mark_dirty(s.get());
  return s;
}

// The mask blended at half strength over every picture pixel of a non-background class.
void paint_mask(cairo_surface_t* s, const results::Segmentation& mask, const std::vector<std::string>& names) {
  cairo_surface_flush(s);
  unsigned char* data = cairo_image_surface_get_data(s);
  const int stride = cairo_image_surface_get_stride(s);
  const int width = cairo_image_surface_get_width(s), height = cairo_image_surface_get_height(s);
  for (int y = 0; y < height; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + static_cast<size_t>(y) * static_cast<size_t>(stride));
    for (int x = 0; x < width; ++x) {
      const int32_t c = results::class_at(mask, x, y);
      const std::string& label = c >= 0 && static_cast<size_t>(c) < names.size() ? names[static_cast<size_t>(c)] : "";
      if (c < 0 || is_background(c, label)) continue;
      const Rgb k = class_colour(c);
      const uint32_t v = row[x];
      auto mix = [](uint32_t channel, double colour) {
        return static_cast<uint32_t>(std::lround(0.5 * channel + 0.5 * 255.0 * colour));
      };
      row[x] = (mix((v >> 16) & 0xFF, k.r) << 16) | (mix((v >> 8) & 0xFF, k.g) << 8) | mix(v & 0xFF, k.b);
    }
  }
  cairo_surface_mark_dirty(s);
}

// Text on a dark box at (x, y) (its top-left corner), kept inside the picture.
void caption(cairo_t* cr, const std::string& text, double x, double y, double size, const Rgb& accent) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, text.c_str(), &ext);
  const double pad = size * 0.25, w = ext.x_advance + 2 * pad, h = size * 1.3;
  const double width = cairo_image_surface_get_width(cairo_get_target(cr));
  const double height = cairo_image_surface_get_height(cairo_get_target(cr));
  x = std::clamp(x, 0.0, std::max(0.0, width - w));
  y = std::clamp(y, 0.0, std::max(0.0, height - h));
  cairo_set_source_rgba(cr, 0.05, 0.05, 0.05, 0.75);
  cairo_rectangle(cr, x, y, w, h);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, accent.r, accent.g, accent.b);
  cairo_rectangle(cr, x, y, 0.3 * pad, h);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_move_to(cr, x + pad, y + size);
  cairo_show_text(cr, text.c_str());
}

}  // namespace

Status draw_results(const image::Image& picture, const results::Decoded& found, const std::string& png_path) {
  if (picture.width == 0 || picture.height == 0 || (picture.channels != 1 && picture.channels != 3))
    return make_error(Errc::invalid_argument, "--draw: the picture is empty or not grey/RGB");
  auto surface = picture_surface(picture);
  if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
    return make_error(Errc::internal, "--draw: cannot make a {}x{} drawing surface: {}", picture.width,
                      picture.height, cairo_status_to_string(cairo_surface_status(surface.get())));
  const double scale = std::max(picture.width, picture.height) / 640.0;
  const double line = std::max(2.0, 2.5 * scale), text = std::max(11.0, 15.0 * scale);

  std::vector<std::string> mask_names;
  if (found.mask) {
    for (const auto& a : found.mask->present) {
      if (mask_names.size() <= static_cast<size_t>(a.class_id)) mask_names.resize(static_cast<size_t>(a.class_id) + 1);
      mask_names[static_cast<size_t>(a.class_id)] = a.label;
    }
    paint_mask(surface.get(), *found.mask, mask_names);
  }

  std::unique_ptr<cairo_t, ContextFree> cr(cairo_create(surface.get()));
  cairo_select_font_face(cr.get(), "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_line_join(cr.get(), CAIRO_LINE_JOIN_ROUND);

  // Weakest first, so the labels of the strongest detections end up on top where boxes overlap.
  std::vector<const results::Detection*> order;
  for (const auto& d : found.detections) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->score < b->score; });
  for (const results::Detection* dp : order) {
    const results::Detection& d = *dp;
    const Rgb k = class_colour(d.class_id);
    cairo_set_source_rgb(cr.get(), k.r, k.g, k.b);
    cairo_set_line_width(cr.get(), line);
    cairo_rectangle(cr.get(), d.box.x0, d.box.y0, d.box.x1 - d.box.x0, d.box.y1 - d.box.y0);
    cairo_stroke(cr.get());
    caption(cr.get(), fmt::format("{} {:.2f}", label_text(d.class_id, d.label), d.score), d.box.x0,
            d.box.y0 - text * 1.3, text, k);
  }

  if (!found.keypoints.empty()) {
    constexpr double kMinScore = 0.2;  // joints the model is unsure of are left out of the skeleton
    const Rgb bone{0.1, 0.9, 0.3};
    cairo_set_line_width(cr.get(), line);
    cairo_set_line_cap(cr.get(), CAIRO_LINE_CAP_ROUND);
    for (const auto& [a, b] : results::coco_skeleton()) {
      if (static_cast<size_t>(std::max(a, b)) >= found.keypoints.size()) continue;
      const auto &p = found.keypoints[static_cast<size_t>(a)], &q = found.keypoints[static_cast<size_t>(b)];
      if (p.score < kMinScore || q.score < kMinScore) continue;
      cairo_set_source_rgb(cr.get(), bone.r, bone.g, bone.b);
      cairo_move_to(cr.get(), p.x, p.y);
      cairo_line_to(cr.get(), q.x, q.y);
      cairo_stroke(cr.get());
    }
    for (const auto& p : found.keypoints) {
      if (p.score < kMinScore) continue;
      cairo_set_source_rgb(cr.get(), 1.0, 0.3, 0.1);
      cairo_arc(cr.get(), p.x, p.y, line * 1.6, 0, 2 * M_PI);
      cairo_fill(cr.get());
    }
  }

  // Captions: the top classes, or the mask's classes with their colours.
  double y = 0;
  for (const auto& c : found.classes) {
    caption(cr.get(), fmt::format("{} {:.2f}", label_text(c.index, c.label), c.score), 0, y, text, class_colour(c.index));
    y += text * 1.4;
  }
  if (found.mask)
    for (const auto& a : found.mask->present) {
      if (is_background(a.class_id, a.label)) continue;
      caption(cr.get(), fmt::format("{} {:.0f}%", label_text(a.class_id, a.label), 100.0 * a.fraction), 0, y, text,
              class_colour(a.class_id));
      y += text * 1.4;
    }

  cairo_surface_flush(surface.get());
  const cairo_status_t st = cairo_surface_write_to_png(surface.get(), png_path.c_str());
  cr.reset();
  surface.reset();
  // Font caches cairo and fontconfig keep for the process's lifetime: released here, the one place that draws, so
  // leak checkers see a clean exit.
  cairo_debug_reset_static_data();
  FcFini();
  if (st != CAIRO_STATUS_SUCCESS)
    return make_error(Errc::io_error, "--draw: cannot write {}: {}", png_path, cairo_status_to_string(st));
  return ok();
}

}  // namespace aisrv::cli
