// mayura-desktop: the desktop's actions, done from inside the sandbox on
// the display in $DISPLAY. The engine runs it as one of the sandbox's
// commands; it answers on stdout (a PNG, or "X Y" for the cursor), says why
// it failed on stderr, and its exit code classes the failure (display.hpp).
//
//   mayura-desktop start WIDTH HEIGHT
//   mayura-desktop screenshot [X Y W H]
//   mayura-desktop cursor
//   mayura-desktop size
//   mayura-desktop move X Y
//   mayura-desktop click X Y BUTTON COUNT
//   mayura-desktop drag X Y X Y [X Y ...]
//   mayura-desktop scroll X Y WHEEL_BUTTON AMOUNT
//   mayura-desktop key KEYSYM[,KEYSYM...] ...   (each argument one combo)
//   mayura-desktop type KEYSYM ...
//
// Keysyms are hexadecimal: names and text become keysyms in the engine,
// which checks them before anything runs.

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "display.hpp"
#include "input.hpp"
#include "screenshot.hpp"
#include "server.hpp"

namespace mayura::desktop {
namespace {

long number(std::string_view text, int base = 10) {
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc{} || end != text.data() + text.size() || text.empty())
    throw Failure{kBadInput, "not a number: '" + std::string(text) + "'"};
  return value;
}

std::uint32_t keysym(std::string_view text) {
  if (text.rfind("0x", 0) == 0) text.remove_prefix(2);
  const long value = number(text, 16);
  if (value <= 0 || value > 0x1ffffff) throw Failure{kBadInput, "not a keysym: '" + std::string(text) + "'"};
  return static_cast<std::uint32_t>(value);
}

int intval(std::string_view text) {
  const long value = number(text);
  if (value < -100000 || value > 100000) throw Failure{kBadInput, "out of range: '" + std::string(text) + "'"};
  return static_cast<int>(value);
}

void want(const std::vector<std::string_view>& args, std::size_t count, const char* usage) {
  if (args.size() != count) throw Failure{kBadInput, std::string("usage: mayura-desktop ") + usage};
}

void say(const std::string& line) {
  const std::string out = line + "\n";
  if (::write(STDOUT_FILENO, out.data(), out.size()) != static_cast<ssize_t>(out.size()))
    throw Failure{kFailed, "writing the answer failed"};
}

void run(const std::vector<std::string_view>& args) {
  if (args.empty()) throw Failure{kBadInput, "usage: mayura-desktop ACTION ARGS..."};
  const std::string_view verb = args[0];
  const std::vector<std::string_view> rest(args.begin() + 1, args.end());
  if (verb == "start") {
    want(rest, 2, "start WIDTH HEIGHT");
    return start_server(intval(rest[0]), intval(rest[1]));
  }
  const Display display;
  if (verb == "screenshot") {
    if (rest.empty()) return screenshot(display, std::nullopt, STDOUT_FILENO);
    want(rest, 4, "screenshot [X Y W H]");
    return screenshot(display, Region{intval(rest[0]), intval(rest[1]), intval(rest[2]), intval(rest[3])},
                      STDOUT_FILENO);
  }
  if (verb == "cursor") {
    want(rest, 0, "cursor");
    const Point at = cursor(display);
    return say(std::to_string(at.x) + " " + std::to_string(at.y));
  }
  if (verb == "size") {
    want(rest, 0, "size");
    return say(std::to_string(display.width()) + " " + std::to_string(display.height()));
  }
  if (verb == "move") {
    want(rest, 2, "move X Y");
    return move(display, {intval(rest[0]), intval(rest[1])});
  }
  if (verb == "click") {
    want(rest, 4, "click X Y BUTTON COUNT");
    return click(display, {intval(rest[0]), intval(rest[1])}, intval(rest[2]), intval(rest[3]));
  }
  if (verb == "drag") {
    if (rest.size() < 4 || rest.size() % 2 != 0)
      throw Failure{kBadInput, "usage: mayura-desktop drag X Y X Y [X Y ...]"};
    std::vector<Point> path;
    for (std::size_t i = 0; i < rest.size(); i += 2) path.push_back({intval(rest[i]), intval(rest[i + 1])});
    return drag(display, path);
  }
  if (verb == "scroll") {
    want(rest, 4, "scroll X Y WHEEL_BUTTON AMOUNT");
    return scroll(display, {intval(rest[0]), intval(rest[1])}, intval(rest[2]), intval(rest[3]));
  }
  if (verb == "key") {
    if (rest.empty()) throw Failure{kBadInput, "usage: mayura-desktop key KEYSYM[,KEYSYM...] ..."};
    std::vector<std::vector<std::uint32_t>> combos;
    for (std::string_view combo : rest) {
      auto& keys = combos.emplace_back();
      for (std::size_t at = 0;;) {
        const std::size_t comma = combo.find(',', at);
        keys.push_back(keysym(combo.substr(at, comma - at)));
        if (comma == std::string_view::npos) break;
        at = comma + 1;
      }
    }
    return key(display, combos);
  }
  if (verb == "type") {
    if (rest.empty()) throw Failure{kBadInput, "usage: mayura-desktop type KEYSYM ..."};
    std::vector<std::uint32_t> keysyms;
    keysyms.reserve(rest.size());
    for (std::string_view k : rest) keysyms.push_back(keysym(k));
    return type(display, keysyms);
  }
  throw Failure{kBadInput, "no such action: '" + std::string(verb) + "'"};
}

}  // namespace
}  // namespace mayura::desktop

int main(int argc, char** argv) {
  try {
    mayura::desktop::run(std::vector<std::string_view>(argv + 1, argv + argc));
    return mayura::desktop::kOk;
  } catch (const mayura::desktop::Failure& f) {
    std::fprintf(stderr, "mayura-desktop: %s\n", f.message.c_str());
    return f.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mayura-desktop: %s\n", e.what());
    return mayura::desktop::kFailed;
  }
}
