#pragma once
// PNG through libpng, written as it is made: an image of 8-bit RGB rows,
// each asked for in turn, so a screen is never held twice.

#include <functional>

namespace mayura::desktop {

// Writes a `width` x `height` PNG to `fd`. `row(y)` gives row y as width * 3
// bytes (red, green, blue); it may throw, and what it throws comes out here.
// Compression favours time over size: a screenshot is read once, by a model,
// and its bytes travel only over a local pipe. A Failure if libpng or the
// write fails.
void write_png(int fd, int width, int height, const std::function<const unsigned char*(int)>& row);

}  // namespace mayura::desktop
