#pragma once
// A PNG decoded by libpng, for the desktop tests' pixel checks.

#include <gtest/gtest.h>
#include <png.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mayura::testing {

struct PngImage {
  int width = 0;
  int height = 0;
  std::vector<unsigned char> rgb;
  // The pixel at (x, y) as 0xRRGGBB.
  std::uint32_t at(int x, int y) const {
    const std::size_t i =
        (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 3;
    return (std::uint32_t{rgb[i]} << 16) | (std::uint32_t{rgb[i + 1]} << 8) | rgb[i + 2];
  }
};

// A test failure, and an empty image, if `png` is not one.
inline PngImage decode_png(const std::string& png) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  PngImage out;
  if (png_image_begin_read_from_memory(&image, png.data(), png.size()) == 0) {
    ADD_FAILURE() << "not a PNG: " << image.message;
    return out;
  }
  image.format = PNG_FORMAT_RGB;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr) == 0) {
    ADD_FAILURE() << "a broken PNG: " << image.message;
    return out;
  }
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  return out;
}

}  // namespace mayura::testing
