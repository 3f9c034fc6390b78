#pragma once
// What a caller asks the desktop to type or press, as keysyms, checked in
// the engine before anything runs: the helper inside the sandbox gets only
// numbers. Names are xdotool's (`ctrl+s`, `Return`, `alt+Tab`, `KP_Enter`),
// resolved by libxkbcommon, which holds X's whole keysym table.

#include <cstdint>
#include <string_view>
#include <vector>

namespace mayura::desktop {

// The most characters one `type` takes, and the most combos one `key` takes.
inline constexpr std::size_t kMaxTypeChars = 10'000;
inline constexpr std::size_t kMaxKeyCombos = 100;

// "ctrl+shift+t", or several combos separated by spaces ("ctrl+a Delete"):
// each combo's keysyms, in the order they are pressed. INVALID_INPUT for an
// empty combo, an empty key name (`ctrl+`) or a name X does not know.
std::vector<std::vector<std::uint32_t>> combo_keysyms(std::string_view combos);

// UTF-8 text as the keysyms that type it: a newline is Return and a tab Tab;
// any other character is its own keysym, whether or not a key on the keymap
// carries it. INVALID_INPUT for empty text, text that is not UTF-8, other
// control characters, or more than kMaxTypeChars characters.
std::vector<std::uint32_t> text_keysyms(std::string_view text);

}  // namespace mayura::desktop
