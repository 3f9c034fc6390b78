#include "keys.hpp"

#include <xkbcommon/xkbcommon.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "mayura/errors.hpp"

namespace mayura::desktop {
namespace {

[[noreturn]] void refuse(const std::string& message) { throw SandboxError(Reason::INVALID_INPUT, message); }

// xdotool's short names for the modifiers; every other name is X's own.
std::string x_name(std::string_view name) {
  if (name == "ctrl" || name == "control") return "Control_L";
  if (name == "alt") return "Alt_L";
  if (name == "shift") return "Shift_L";
  if (name == "super" || name == "win" || name == "cmd") return "Super_L";
  if (name == "meta") return "Meta_L";
  return std::string(name);
}

std::uint32_t keysym_named(std::string_view name, std::string_view combo) {
  if (name.empty()) refuse("the key combo '" + std::string(combo) + "' has an empty key name");
  const std::string x = x_name(name);
  xkb_keysym_t sym = xkb_keysym_from_name(x.c_str(), XKB_KEYSYM_NO_FLAGS);
  if (sym == XKB_KEY_NoSymbol) sym = xkb_keysym_from_name(x.c_str(), XKB_KEYSYM_CASE_INSENSITIVE);
  if (sym == XKB_KEY_NoSymbol) refuse("no key is named '" + std::string(name) + "' (in '" + std::string(combo) + "')");
  return sym;
}

// The next character of `text` at `at`, advancing it; -1 if the bytes there
// are not UTF-8 (overlong forms, surrogates and values past U+10FFFF
// included).
long next_char(std::string_view text, std::size_t& at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  int more = 0;
  long cp = 0;
  long least = 0;
  if (lead < 0x80) {
    ++at;
    return lead;
  }
  if ((lead & 0xe0) == 0xc0) {
    more = 1;
    cp = lead & 0x1f;
    least = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    more = 2;
    cp = lead & 0x0f;
    least = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    more = 3;
    cp = lead & 0x07;
    least = 0x10000;
  } else {
    return -1;
  }
  if (at + static_cast<std::size_t>(more) >= text.size()) return -1;
  for (int i = 1; i <= more; ++i) {
    const auto c = static_cast<unsigned char>(text[at + static_cast<std::size_t>(i)]);
    if ((c & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  at += static_cast<std::size_t>(more) + 1;
  return cp;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> combo_keysyms(std::string_view combos) {
  std::vector<std::vector<std::uint32_t>> out;
  std::size_t at = 0;
  while (at < combos.size()) {
    if (combos[at] == ' ') {
      ++at;
      continue;
    }
    const std::size_t end = std::min(combos.find(' ', at), combos.size());
    const std::string_view combo = combos.substr(at, end - at);
    auto& keys = out.emplace_back();
    for (std::size_t from = 0;;) {
      const std::size_t plus = combo.find('+', from);
      keys.push_back(keysym_named(combo.substr(from, plus - from), combo));
      if (plus == std::string_view::npos) break;
      from = plus + 1;
    }
    if (out.size() > kMaxKeyCombos) refuse("more than " + std::to_string(kMaxKeyCombos) + " key combos at once");
    at = end;
  }
  if (out.empty()) refuse("no key to press");
  return out;
}

std::vector<std::uint32_t> text_keysyms(std::string_view text) {
  if (text.empty()) refuse("no text to type");
  std::vector<std::uint32_t> out;
  for (std::size_t at = 0; at < text.size();) {
    const long cp = next_char(text, at);
    if (cp < 0) refuse("the text to type is not UTF-8");
    if (out.size() == kMaxTypeChars)
      refuse("the text to type is longer than " + std::to_string(kMaxTypeChars) + " characters");
    if (cp == '\n') {
      out.push_back(XKB_KEY_Return);
    } else if (cp == '\t') {
      out.push_back(XKB_KEY_Tab);
    } else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04lX", cp);
      refuse(std::string("the text to type holds a control character (") + code + "); send it as a key");
    } else {
      out.push_back(xkb_utf32_to_keysym(static_cast<std::uint32_t>(cp)));
    }
  }
  return out;
}

}  // namespace mayura::desktop
