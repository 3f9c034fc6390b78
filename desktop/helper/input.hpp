#pragma once
// The mouse and the keyboard, through XTEST: what the server does with them
// is what it does with a real device's events.

#include <cstdint>
#include <utility>
#include <vector>

#include "display.hpp"

namespace mayura::desktop {

struct Point {
  long x = 0, y = 0;
};

// Every point is checked to be on the screen before anything is sent.
void move(const Display& display, Point to);
// `count` presses and releases of `button` (1 left, 2 middle, 3 right) at `at`.
void click(const Display& display, Point at, int button, int count);
// Button 1 pressed at the first point, moved through the rest, released at
// the last.
void drag(const Display& display, const std::vector<Point>& path);
// `amount` wheel steps at `at`: buttons 4 (up), 5 (down), 6 (left), 7 (right).
void scroll(const Display& display, Point at, int wheel_button, int amount);
// Each combo's keys pressed in order and released in reverse, one combo
// after the other.
void key(const Display& display, const std::vector<std::vector<std::uint32_t>>& combos);
// Each keysym typed in turn, with Shift where the keymap puts it there. A
// keysym on no key is given a key of its own first.
void type(const Display& display, const std::vector<std::uint32_t>& keysyms);
// Where the pointer is.
Point cursor(const Display& display);

}  // namespace mayura::desktop
