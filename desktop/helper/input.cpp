#include "input.hpp"

#include <xcb/xtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace mayura::desktop {
namespace {

constexpr std::uint32_t kShiftL = 0xffe1;  // XK_Shift_L

template <typename Reply>
using Owned = std::unique_ptr<Reply, decltype(&std::free)>;

void fake(const Display& d, std::uint8_t type, std::uint8_t detail, Point at = {}) {
  xcb_test_fake_input(d.connection(), type, detail, XCB_CURRENT_TIME, type == XCB_MOTION_NOTIFY ? d.root() : XCB_NONE,
                      static_cast<std::int16_t>(at.x), static_cast<std::int16_t>(at.y), 0);
}

void press_release(const Display& d, std::uint8_t button) {
  fake(d, XCB_BUTTON_PRESS, button);
  fake(d, XCB_BUTTON_RELEASE, button);
}

// Sends what is queued and waits until the server has carried it out, so
// the action has happened when the helper answers.
void finish(const Display& d) {
  xcb_flush(d.connection());
  d.sync();
}

// The server's keymap: which key gives which keysym, and in which column
// (0 plain, 1 with Shift). Keys with no keysym are spare, for keysyms no
// key gives.
class Keymap {
 public:
  explicit Keymap(const Display& d) : d_(d) {
    const xcb_setup_t* setup = xcb_get_setup(d.connection());
    min_ = setup->min_keycode;
    const int count = setup->max_keycode - setup->min_keycode + 1;
    const Owned<xcb_get_keyboard_mapping_reply_t> reply(
        xcb_get_keyboard_mapping_reply(
            d.connection(), xcb_get_keyboard_mapping(d.connection(), min_, static_cast<std::uint8_t>(count)), nullptr),
        &std::free);
    if (!reply) throw Failure{kFailed, "the X server did not give its keymap"};
    per_key_ = reply->keysyms_per_keycode;
    const xcb_keysym_t* syms = xcb_get_keyboard_mapping_keysyms(reply.get());
    syms_.assign(syms, syms + xcb_get_keyboard_mapping_keysyms_length(reply.get()));
    if (per_key_ == 0) throw Failure{kFailed, "the X server's keymap is empty"};
  }

  struct Found {
    std::uint8_t code = 0;
    int column = -1;  // -1: on no key
  };

  // The key giving `keysym` in column 0 or 1; for a combo, in any column.
  Found find(std::uint32_t keysym, bool any_column) const {
    const int columns = any_column ? per_key_ : std::min(per_key_, 2);
    for (int column = 0; column < columns; ++column) {
      for (std::size_t k = 0; k * per_key_ < syms_.size(); ++k) {
        if (syms_[k * per_key_ + static_cast<std::size_t>(column)] == keysym)
          return {static_cast<std::uint8_t>(min_ + k), column};
      }
    }
    return {};
  }

  // Gives `keysym` a key: a spare one; when none is left, the one given
  // longest ago, by this action or an earlier one. The server is never
  // reset, so what earlier actions gave stays given (a layout has some 20
  // spare keys): the keys given, oldest first, are kept on the root window
  // (kGivenKeys), since nothing in a key's row tells a given one from a
  // layout's. The server carries the change out before any key event sent
  // after it.
  std::uint8_t assign(std::uint32_t keysym) {
    const std::size_t keys = syms_.size() / per_key_;
    std::size_t spare = keys;
    for (std::size_t k = keys; k-- > 0;) {
      bool empty = true;
      for (int c = 0; c < per_key_; ++c) empty = empty && at(k, c) == 0;
      if (empty) {
        spare = k;
        break;
      }
    }
    std::vector<std::uint8_t> given = given_keys();
    if (spare == keys) {
      // the oldest that this action has not given already, if there is one
      auto oldest = std::find_if(given.begin(), given.end(), [&](std::uint8_t code) {
        return std::find(given_now_.begin(), given_now_.end(), code) == given_now_.end();
      });
      if (oldest == given.end()) oldest = given.begin();
      if (oldest == given.end()) throw Failure{kFailed, "the keymap has no key free for a keysym it lacks"};
      spare = static_cast<std::size_t>(*oldest - min_);
    }
    const auto given_code = static_cast<std::uint8_t>(min_ + spare);
    std::erase(given, given_code);
    given.push_back(given_code);
    given_now_.push_back(given_code);
    set_given_keys(given);
    std::vector<xcb_keysym_t> row(static_cast<std::size_t>(per_key_), 0);
    row[0] = keysym;
    if (per_key_ > 1) row[1] = keysym;  // the same with Shift held
    const auto code = static_cast<std::uint8_t>(min_ + spare);
    xcb_change_keyboard_mapping(d_.connection(), 1, code, static_cast<std::uint8_t>(per_key_), row.data());
    std::copy(row.begin(), row.end(), syms_.begin() + static_cast<std::ptrdiff_t>(spare * per_key_));
    return code;
  }

 private:
  static constexpr const char* kGivenKeys = "_MAYURA_GIVEN_KEYS";

  xcb_keysym_t at(std::size_t key, int column) const {
    return syms_[key * per_key_ + static_cast<std::size_t>(column)];
  }

  xcb_atom_t given_atom() {
    if (atom_ == XCB_NONE) {
      const Owned<xcb_intern_atom_reply_t> reply(
          xcb_intern_atom_reply(
              d_.connection(),
              xcb_intern_atom(d_.connection(), 0, static_cast<std::uint16_t>(std::strlen(kGivenKeys)), kGivenKeys),
              nullptr),
          &std::free);
      if (!reply) throw Failure{kFailed, "the X server did not name the given keys' property"};
      atom_ = reply->atom;
    }
    return atom_;
  }

  std::vector<std::uint8_t> given_keys() {
    const xcb_atom_t atom = given_atom();
    const Owned<xcb_get_property_reply_t> reply(
        xcb_get_property_reply(
            d_.connection(), xcb_get_property(d_.connection(), 0, d_.root(), atom, XCB_ATOM_CARDINAL, 0, 256), nullptr),
        &std::free);
    if (!reply || reply->format != 8) return {};
    const auto* data = static_cast<const std::uint8_t*>(xcb_get_property_value(reply.get()));
    // (any client may have written it: only this keymap's keys count)
    std::vector<std::uint8_t> given;
    const std::size_t keys = syms_.size() / per_key_;
    for (int i = 0; i < xcb_get_property_value_length(reply.get()); ++i) {
      if (data[i] >= min_ && static_cast<std::size_t>(data[i] - min_) < keys &&
          std::find(given.begin(), given.end(), data[i]) == given.end()) {
        given.push_back(data[i]);
      }
    }
    return given;
  }

  void set_given_keys(const std::vector<std::uint8_t>& given) {
    xcb_change_property(d_.connection(), XCB_PROP_MODE_REPLACE, d_.root(), given_atom(), XCB_ATOM_CARDINAL, 8,
                        static_cast<std::uint32_t>(given.size()), given.data());
  }

  const Display& d_;
  std::uint8_t min_ = 0;
  int per_key_ = 0;
  std::vector<xcb_keysym_t> syms_;
  std::vector<std::uint8_t> given_now_;  // by this action
  xcb_atom_t atom_ = XCB_NONE;
};

}  // namespace

void move(const Display& display, Point to) {
  display.check_point(to.x, to.y);
  display.require_xtest();
  fake(display, XCB_MOTION_NOTIFY, 0, to);
  finish(display);
}

void click(const Display& display, Point at, int button, int count) {
  display.check_point(at.x, at.y);
  if (button < 1 || button > 3) throw Failure{kBadInput, "button " + std::to_string(button) + " is not 1, 2 or 3"};
  if (count < 1 || count > 3) throw Failure{kBadInput, "a click count of " + std::to_string(count) + " is not 1 to 3"};
  display.require_xtest();
  fake(display, XCB_MOTION_NOTIFY, 0, at);
  for (int i = 0; i < count; ++i) press_release(display, static_cast<std::uint8_t>(button));
  finish(display);
}

void drag(const Display& display, const std::vector<Point>& path) {
  if (path.size() < 2) throw Failure{kBadInput, "a drag needs at least two points"};
  for (const Point& p : path) display.check_point(p.x, p.y);
  display.require_xtest();
  fake(display, XCB_MOTION_NOTIFY, 0, path.front());
  fake(display, XCB_BUTTON_PRESS, 1);
  // Each step is carried out before the next, so a client sees the pointer
  // pass through every point with the button held.
  for (std::size_t i = 1; i < path.size(); ++i) {
    finish(display);
    fake(display, XCB_MOTION_NOTIFY, 0, path[i]);
  }
  fake(display, XCB_BUTTON_RELEASE, 1);
  finish(display);
}

void scroll(const Display& display, Point at, int wheel_button, int amount) {
  display.check_point(at.x, at.y);
  if (wheel_button < 4 || wheel_button > 7) throw Failure{kBadInput, "a wheel button is 4 to 7"};
  if (amount < 1 || amount > 100) throw Failure{kBadInput, "a scroll amount is 1 to 100"};
  display.require_xtest();
  fake(display, XCB_MOTION_NOTIFY, 0, at);
  for (int i = 0; i < amount; ++i) press_release(display, static_cast<std::uint8_t>(wheel_button));
  finish(display);
}

void key(const Display& display, const std::vector<std::vector<std::uint32_t>>& combos) {
  display.require_xtest();
  Keymap keymap(display);
  for (const auto& combo : combos) {
    std::vector<std::uint8_t> codes;
    for (const std::uint32_t keysym : combo) {
      const Keymap::Found found = keymap.find(keysym, true);
      codes.push_back(found.column >= 0 ? found.code : keymap.assign(keysym));
    }
    for (const std::uint8_t code : codes) fake(display, XCB_KEY_PRESS, code);
    for (auto it = codes.rbegin(); it != codes.rend(); ++it) fake(display, XCB_KEY_RELEASE, *it);
  }
  finish(display);
}

void type(const Display& display, const std::vector<std::uint32_t>& keysyms) {
  display.require_xtest();
  Keymap keymap(display);
  const Keymap::Found shift = keymap.find(kShiftL, false);
  for (const std::uint32_t keysym : keysyms) {
    Keymap::Found found = keymap.find(keysym, false);
    if (found.column == 1 && shift.column < 0) found = {};  // no Shift key to reach it with
    if (found.column < 0) found = {keymap.assign(keysym), 0};
    if (found.column == 1) fake(display, XCB_KEY_PRESS, shift.code);
    fake(display, XCB_KEY_PRESS, found.code);
    fake(display, XCB_KEY_RELEASE, found.code);
    if (found.column == 1) fake(display, XCB_KEY_RELEASE, shift.code);
  }
  finish(display);
}

Point cursor(const Display& display) {
  const Owned<xcb_query_pointer_reply_t> reply(
      xcb_query_pointer_reply(display.connection(), xcb_query_pointer(display.connection(), display.root()), nullptr),
      &std::free);
  if (!reply) throw Failure{kFailed, "the X server did not say where the pointer is"};
  return {reply->root_x, reply->root_y};
}

}  // namespace mayura::desktop
