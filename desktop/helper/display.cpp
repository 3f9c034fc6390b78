#include "display.hpp"

#include <xcb/xtest.h>

#include <cstdlib>
#include <memory>

namespace mayura::desktop {

Display::Display() {
  const char* name = std::getenv("DISPLAY");
  if (name == nullptr || *name == '\0') throw Failure{kNoDisplay, "DISPLAY is not set"};
  int preferred = 0;
  connection_ = xcb_connect(name, &preferred);
  if (xcb_connection_has_error(connection_) != 0) {
    xcb_disconnect(connection_);
    connection_ = nullptr;
    throw Failure{kNoDisplay, std::string("no X server answers on display ") + name};
  }
  xcb_screen_iterator_t it = xcb_setup_roots_iterator(xcb_get_setup(connection_));
  for (int i = 0; i < preferred && it.rem > 0; ++i) xcb_screen_next(&it);
  if (it.rem == 0) {
    xcb_disconnect(connection_);
    connection_ = nullptr;
    throw Failure{kNoDisplay, std::string("display ") + name + " has no screen"};
  }
  screen_ = it.data;
}

Display::~Display() {
  if (connection_ != nullptr) xcb_disconnect(connection_);
}

void Display::require_xtest() const {
  const xcb_query_extension_reply_t* ext = xcb_get_extension_data(connection_, &xcb_test_id);
  if (ext == nullptr || ext->present == 0) throw Failure{kFailed, "the X server has no XTEST extension"};
}

void Display::sync() const {
  const std::unique_ptr<xcb_get_input_focus_reply_t, decltype(&std::free)> reply(
      xcb_get_input_focus_reply(connection_, xcb_get_input_focus(connection_), nullptr), &std::free);
  if (!reply) throw Failure{kFailed, "the X server went away"};
}

void Display::check_point(long x, long y) const {
  if (x < 0 || y < 0 || x >= width() || y >= height()) {
    throw Failure{kBadInput, "(" + std::to_string(x) + ", " + std::to_string(y) + ") is outside the screen (" +
                                 std::to_string(width()) + "x" + std::to_string(height()) + ")"};
  }
}

}  // namespace mayura::desktop
