#pragma once
// Base64 (RFC 4648, with padding): how bytes cross a command transport that
// carries only text.

#include <optional>
#include <string>
#include <string_view>

namespace mayura::detail {

std::string base64_encode(std::string_view bytes);
// Line breaks and spaces (as `base64` wraps its output) are skipped; any
// other character outside the alphabet, or a bad length, gives none.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace mayura::detail
