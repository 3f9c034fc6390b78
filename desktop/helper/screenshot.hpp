#pragma once
// A screenshot of the root window, or of a region of it, as PNG.

#include <optional>

#include "display.hpp"

namespace mayura::desktop {

struct Region {
  long x = 0, y = 0, width = 0, height = 0;
};

// The region `asked`, or the whole screen. A Failure (kBadInput) when the
// region does not lie whole on the screen.
void screenshot(const Display& display, std::optional<Region> asked, int fd);

}  // namespace mayura::desktop
