// The desktop's calls of a Sandbox, checked here before the provider sees
// them (a sandbox with a display, an action that fits its screen) and their
// answers after (a PNG, a cursor on the screen).

#include <charconv>
#include <string>
#include <string_view>
#include <utility>

#include "mayura/async.hpp"
#include "mayura/sandboxes.hpp"
#include "mayura/validate.hpp"
#include "pacing.hpp"
#include "sandboxes_state.hpp"

namespace mayura {

using detail::guarded;
using detail::throw_if_cancelled;

std::string Sandbox::desktop(const DesktopAction& action, std::stop_token cancellation) const {
  if (!state().owner->features.desktop) throw SandboxError(Reason::INVALID_INPUT, "the provider has no desktop");
  if (!state().desktop) throw SandboxError(Reason::INVALID_INPUT, "the sandbox was created without a desktop");
  check_desktop_action(action, *state().desktop);
  throw_if_cancelled(cancellation);
  auto backend = state().use_running();
  return guarded("desktop", [&] { return backend->desktop(action, cancellation); });
}

std::string Sandbox::desktop_screenshot(const std::optional<Region>& region, std::stop_token stop,
                                        const std::stop_token& caller) const {
  DesktopAction a;
  a.kind = DesktopAction::Kind::screenshot;
  a.region = region;
  const detail::JoinedStop joined(std::move(stop), caller);
  std::string png = desktop(a, joined.token());
  // What comes back went through the sandbox: it is handed on as bytes, and
  // only its kind is checked.
  constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (std::string_view(png).substr(0, kSignature.size()) != kSignature) {
    throw SandboxError(Reason::INTERNAL, "the desktop's screenshot is not a PNG");
  }
  return png;
}

Point Sandbox::desktop_cursor(std::stop_token cancellation) const {
  DesktopAction a;
  a.kind = DesktopAction::Kind::cursor;
  const std::string answer = desktop(a, std::move(cancellation));
  // "X Y\n", both on the screen
  Point p;
  const char* at = answer.data();
  const char* end = answer.data() + answer.size();
  auto [after_x, ex] = std::from_chars(at, end, p.x);
  bool ok = ex == std::errc{} && after_x < end && *after_x == ' ';
  if (ok) {
    auto [after_y, ey] = std::from_chars(after_x + 1, end, p.y);
    ok = ey == std::errc{} && after_y + 1 == end && *after_y == '\n';
  }
  const DesktopSize& screen = *state().desktop;
  if (!ok || p.x < 0 || p.y < 0 || p.x >= screen.width || p.y >= screen.height) {
    throw SandboxError(Reason::INTERNAL, "the desktop gave no cursor position");
  }
  return p;
}

std::string Sandbox::screenshot(const ScreenshotOptions& options) const {
  return desktop_screenshot(options.region, {}, options.cancellation);
}

Point Sandbox::cursor_position() const { return desktop_cursor({}); }

std::optional<DesktopSize> Sandbox::desktop_size() const { return state().desktop; }

void Sandbox::move(Point to) const { desktop(detail::move_action(to), {}); }

void Sandbox::click(Point at, MouseButton button, int count) const {
  desktop(detail::click_action(at, button, count), {});
}

void Sandbox::drag(const std::vector<Point>& path) const { desktop(detail::drag_action(path), {}); }

void Sandbox::scroll(Point at, ScrollDirection direction, int amount) const {
  desktop(detail::scroll_action(at, direction, amount), {});
}

void Sandbox::type(std::string_view text) const {
  desktop(detail::text_action(DesktopAction::Kind::type, std::string(text)), {});
}

void Sandbox::key(std::string_view combo) const {
  desktop(detail::text_action(DesktopAction::Kind::key, std::string(combo)), {});
}

namespace detail {

DesktopAction move_action(Point to) {
  DesktopAction a;
  a.kind = DesktopAction::Kind::move;
  a.points = {to};
  return a;
}

DesktopAction click_action(Point at, MouseButton button, int count) {
  DesktopAction a = move_action(at);
  a.kind = DesktopAction::Kind::click;
  a.button = button;
  a.count = count;
  return a;
}

DesktopAction drag_action(std::vector<Point> path) {
  DesktopAction a;
  a.kind = DesktopAction::Kind::drag;
  a.points = std::move(path);
  return a;
}

DesktopAction scroll_action(Point at, ScrollDirection direction, int amount) {
  DesktopAction a = move_action(at);
  a.kind = DesktopAction::Kind::scroll;
  a.direction = direction;
  a.amount = amount;
  return a;
}

DesktopAction text_action(DesktopAction::Kind kind, std::string text) {
  DesktopAction a;
  a.kind = kind;
  a.text = std::move(text);
  return a;
}

}  // namespace detail

}  // namespace mayura
