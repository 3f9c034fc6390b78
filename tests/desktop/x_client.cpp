// The desktop tests' own X client: a window over the whole screen, painted
// in known colours at known places, that writes every event it gets to a
// log, a line each, flushed at once:
//   ready WIDTH HEIGHT
//   press BUTTON X Y / release BUTTON X Y / motion X Y STATE
//   key KEYSYM_OF_THE_KEY KEYSYM_WITH_SHIFT_APPLIED STATE / keyup KEYSYM_OF_THE_KEY
// (keysyms and states in hex). Usage: x_client LOG, on $DISPLAY.
// `x_client LOG grab` instead grabs the server, writes "grabbed" and holds it
// until killed.

#include <xcb/xcb.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

struct Painted {
  std::uint32_t colour;
  xcb_rectangle_t where;
};

// What the tests look for: the same list is in desktop_test.cpp.
const Painted kPainted[] = {
    {0xff0000, {10, 10, 100, 50}},
    {0x00ff00, {200, 100, 50, 50}},
    {0x0000ff, {600, 400, 40, 80}},
    {0x123456, {300, 300, 10, 10}},
};

class Keymap {
 public:
  void load(xcb_connection_t* c) {
    const xcb_setup_t* setup = xcb_get_setup(c);
    min_ = setup->min_keycode;
    auto* reply = xcb_get_keyboard_mapping_reply(
        c, xcb_get_keyboard_mapping(c, min_, static_cast<std::uint8_t>(setup->max_keycode - min_ + 1)), nullptr);
    if (reply == nullptr) return;
    per_ = reply->keysyms_per_keycode;
    const xcb_keysym_t* syms = xcb_get_keyboard_mapping_keysyms(reply);
    syms_.assign(syms, syms + xcb_get_keyboard_mapping_keysyms_length(reply));
    std::free(reply);
  }
  xcb_keysym_t at(xcb_keycode_t code, int column) const {
    const std::size_t i = static_cast<std::size_t>(code - min_) * per_ + static_cast<std::size_t>(column);
    return per_ > column && i < syms_.size() ? syms_[i] : 0;
  }

 private:
  xcb_keycode_t min_ = 0;
  int per_ = 0;
  std::vector<xcb_keysym_t> syms_;
};

void paint(xcb_connection_t* c, xcb_window_t window) {
  for (const Painted& p : kPainted) {
    const xcb_gcontext_t gc = xcb_generate_id(c);
    const std::uint32_t values[] = {p.colour};
    xcb_create_gc(c, gc, window, XCB_GC_FOREGROUND, values);
    xcb_poly_fill_rectangle(c, window, gc, 1, &p.where);
    xcb_free_gc(c, gc);
  }
  xcb_flush(c);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) return 2;
  FILE* log = std::fopen(argv[1], "w");
  if (log == nullptr) return 2;
  xcb_connection_t* c = xcb_connect(nullptr, nullptr);
  if (xcb_connection_has_error(c) != 0) return 3;
  if (argc == 3) {
    xcb_grab_server(c);
    std::free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nullptr));
    std::fprintf(log, "grabbed\n");
    std::fflush(log);
    for (;;) ::pause();
  }
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
  const xcb_window_t window = xcb_generate_id(c);
  const std::uint32_t values[] = {screen->white_pixel, 1,
                                  XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_BUTTON_PRESS |
                                      XCB_EVENT_MASK_BUTTON_RELEASE | XCB_EVENT_MASK_KEY_PRESS |
                                      XCB_EVENT_MASK_KEY_RELEASE | XCB_EVENT_MASK_POINTER_MOTION};
  xcb_create_window(c, XCB_COPY_FROM_PARENT, window, screen->root, 0, 0, screen->width_in_pixels,
                    screen->height_in_pixels, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual,
                    XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT | XCB_CW_EVENT_MASK, values);
  xcb_map_window(c, window);
  xcb_flush(c);
  Keymap keymap;
  keymap.load(c);
  bool ready = false;
  while (xcb_generic_event_t* event = xcb_wait_for_event(c)) {
    switch (event->response_type & 0x7f) {
      case XCB_EXPOSE:
        paint(c, window);
        if (!ready) {
          xcb_set_input_focus(c, XCB_INPUT_FOCUS_POINTER_ROOT, window, XCB_CURRENT_TIME);
          std::free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nullptr));
          std::fprintf(log, "ready %d %d\n", screen->width_in_pixels, screen->height_in_pixels);
          ready = true;
        }
        break;
      case XCB_BUTTON_PRESS: {
        auto* e = reinterpret_cast<xcb_button_press_event_t*>(event);
        std::fprintf(log, "press %d %d %d\n", e->detail, e->event_x, e->event_y);
        break;
      }
      case XCB_BUTTON_RELEASE: {
        auto* e = reinterpret_cast<xcb_button_release_event_t*>(event);
        std::fprintf(log, "release %d %d %d\n", e->detail, e->event_x, e->event_y);
        break;
      }
      case XCB_MOTION_NOTIFY: {
        auto* e = reinterpret_cast<xcb_motion_notify_event_t*>(event);
        std::fprintf(log, "motion %d %d %x\n", e->event_x, e->event_y, e->state);
        break;
      }
      case XCB_KEY_PRESS: {
        auto* e = reinterpret_cast<xcb_key_press_event_t*>(event);
        const xcb_keysym_t plain = keymap.at(e->detail, 0);
        xcb_keysym_t shifted = (e->state & XCB_MOD_MASK_SHIFT) != 0 ? keymap.at(e->detail, 1) : plain;
        if (shifted == 0) shifted = plain;
        std::fprintf(log, "key %x %x %x\n", plain, shifted, e->state);
        break;
      }
      case XCB_KEY_RELEASE: {
        auto* e = reinterpret_cast<xcb_key_release_event_t*>(event);
        std::fprintf(log, "keyup %x\n", keymap.at(e->detail, 0));
        break;
      }
      case XCB_MAPPING_NOTIFY: keymap.load(c); break;
      default: break;
    }
    std::fflush(log);
    std::free(event);
  }
  xcb_disconnect(c);
  std::fclose(log);
  return 0;
}
