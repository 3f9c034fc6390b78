#include "screenshot.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "png_writer.hpp"

namespace mayura::desktop {
namespace {

using ImageReply = std::unique_ptr<xcb_get_image_reply_t, decltype(&std::free)>;

// One colour channel of a pixel value: where its mask is, scaled to 8 bits.
struct Channel {
  explicit Channel(std::uint32_t mask) : mask_(mask) {
    while (mask != 0 && (mask & 1u) == 0) {
      mask >>= 1;
      ++shift_;
    }
    while ((mask & 1u) != 0) {
      mask >>= 1;
      ++bits_;
    }
  }
  unsigned char of(std::uint32_t pixel) const {
    if (bits_ == 0) return 0;
    const std::uint32_t v = (pixel & mask_) >> shift_;
    return static_cast<unsigned char>(bits_ >= 8 ? v >> (bits_ - 8) : v * 255u / ((1u << bits_) - 1u));
  }

 private:
  std::uint32_t mask_;
  int shift_ = 0;
  int bits_ = 0;
};

// How the server lays out the pixels of the root window's images.
struct Layout {
  int bits_per_pixel = 0;
  int scanline_pad = 0;
  bool lsb_first = true;
  std::uint32_t red = 0, green = 0, blue = 0;
};

Layout layout_of(const Display& display) {
  const xcb_setup_t* setup = xcb_get_setup(display.connection());
  Layout layout;
  layout.lsb_first = setup->image_byte_order == XCB_IMAGE_ORDER_LSB_FIRST;
  const std::uint8_t depth = display.screen().root_depth;
  for (auto f = xcb_setup_pixmap_formats_iterator(setup); f.rem > 0; xcb_format_next(&f)) {
    if (f.data->depth != depth) continue;
    layout.bits_per_pixel = f.data->bits_per_pixel;
    layout.scanline_pad = f.data->scanline_pad;
  }
  for (auto d = xcb_screen_allowed_depths_iterator(&display.screen()); d.rem > 0; xcb_depth_next(&d)) {
    for (auto v = xcb_depth_visuals_iterator(d.data); v.rem > 0; xcb_visualtype_next(&v)) {
      if (v.data->visual_id != display.screen().root_visual) continue;
      if (v.data->_class != XCB_VISUAL_CLASS_TRUE_COLOR && v.data->_class != XCB_VISUAL_CLASS_DIRECT_COLOR) {
        throw Failure{kFailed, "the screen's visual is not true colour"};
      }
      layout.red = v.data->red_mask;
      layout.green = v.data->green_mask;
      layout.blue = v.data->blue_mask;
    }
  }
  if ((layout.bits_per_pixel != 16 && layout.bits_per_pixel != 24 && layout.bits_per_pixel != 32) ||
      layout.scanline_pad == 0 || layout.red == 0) {
    throw Failure{kFailed, "the screen's pixel format (depth " + std::to_string(depth) + ") is not one we read"};
  }
  return layout;
}

// Rows of the region, asked of the server a strip at a time (at most 8 MiB
// of reply each) and handed out as RGB.
class Rows {
 public:
  Rows(const Display& display, Region region)
      : display_(display),
        region_(region),
        layout_(layout_of(display)),
        red_(layout_.red),
        green_(layout_.green),
        blue_(layout_.blue),
        stride_(((region.width * layout_.bits_per_pixel + layout_.scanline_pad - 1) / layout_.scanline_pad) *
                layout_.scanline_pad / 8),
        strip_rows_(std::clamp<long>((8L << 20) / stride_, 1, region.height)),
        rgb_(static_cast<std::size_t>(region.width) * 3) {}

  const unsigned char* row(int y) {
    if (!strip_ || y >= strip_y_ + strip_rows_) fetch(y);
    const std::size_t offset = static_cast<std::size_t>(y - strip_y_) * static_cast<std::size_t>(stride_);
    if (offset + static_cast<std::size_t>(stride_) > strip_bytes_)
      throw Failure{kFailed, "the X server sent a short image"};
    convert(xcb_get_image_data(strip_.get()) + offset);
    return rgb_.data();
  }

 private:
  void fetch(int y) {
    strip_y_ = y;
    const long rows = std::min<long>(strip_rows_, region_.height - y);
    xcb_connection_t* c = display_.connection();
    strip_.reset(xcb_get_image_reply(
        c,
        xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, display_.root(), static_cast<std::int16_t>(region_.x),
                      static_cast<std::int16_t>(region_.y + y), static_cast<std::uint16_t>(region_.width),
                      static_cast<std::uint16_t>(rows), ~0u),
        nullptr));
    if (!strip_) throw Failure{kFailed, "the X server refused the screenshot"};
    strip_bytes_ = static_cast<std::size_t>(xcb_get_image_data_length(strip_.get()));
  }

  void convert(const std::uint8_t* in) {
    unsigned char* out = rgb_.data();
    const int bytes = layout_.bits_per_pixel / 8;
    if (bytes == 4 && layout_.lsb_first && layout_.red == 0xff0000 && layout_.green == 0xff00 && layout_.blue == 0xff) {
      for (long x = 0; x < region_.width; ++x, in += 4, out += 3) {  // the common case: B, G, R, pad
        out[0] = in[2];
        out[1] = in[1];
        out[2] = in[0];
      }
      return;
    }
    for (long x = 0; x < region_.width; ++x, in += bytes, out += 3) {
      std::uint32_t pixel = 0;
      for (int b = 0; b < bytes; ++b) {
        const int at = layout_.lsb_first ? b : bytes - 1 - b;
        pixel |= static_cast<std::uint32_t>(in[at]) << (8 * b);
      }
      out[0] = red_.of(pixel);
      out[1] = green_.of(pixel);
      out[2] = blue_.of(pixel);
    }
  }

  const Display& display_;
  Region region_;
  Layout layout_;
  Channel red_, green_, blue_;
  long stride_;
  long strip_rows_;
  ImageReply strip_{nullptr, &std::free};
  int strip_y_ = 0;
  std::size_t strip_bytes_ = 0;
  std::vector<unsigned char> rgb_;
};

}  // namespace

void screenshot(const Display& display, std::optional<Region> asked, int fd) {
  const Region region = asked.value_or(Region{0, 0, display.width(), display.height()});
  if (region.x < 0 || region.y < 0 || region.width <= 0 || region.height <= 0 ||
      region.x + region.width > display.width() || region.y + region.height > display.height()) {
    throw Failure{kBadInput, "the region " + std::to_string(region.width) + "x" + std::to_string(region.height) +
                                 " at (" + std::to_string(region.x) + ", " + std::to_string(region.y) +
                                 ") is not on the screen (" + std::to_string(display.width()) + "x" +
                                 std::to_string(display.height()) + ")"};
  }
  Rows rows(display, region);
  write_png(fd, static_cast<int>(region.width), static_cast<int>(region.height),
            [&rows](int y) { return rows.row(y); });
}

}  // namespace mayura::desktop
