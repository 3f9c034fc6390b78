#include "tool_json.hpp"

#include <algorithm>

#include "mayura/base/base64.hpp"
#include "mayura/errors.hpp"

namespace mayura::tool_json {
namespace {

[[noreturn]] void bad(const std::string& message) { throw SandboxError(Reason::INVALID_INPUT, message); }

// Length of the valid UTF-8 sequence at `i`, or 0 if there is none.
std::size_t sequence_at(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t min = 0;
  if ((c & 0xe0) == 0xc0) n = 2, min = 0x80;
  else if ((c & 0xf0) == 0xe0) n = 3, min = 0x800;
  else if ((c & 0xf8) == 0xf0) n = 4, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  std::uint32_t cp = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;  // overlong, too large, surrogate
  return n;
}

// The start of the character holding byte `i` (stepping back over
// continuation bytes, at most three).
std::size_t char_start(std::string_view s, std::size_t i) {
  for (int k = 0; k < 3 && i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80; ++k) --i;
  return i;
}

}  // namespace

Input::Input(const nlohmann::json& input, const std::vector<std::string>& known) : input_(input) {
  if (!input.is_object()) bad("the input must be a JSON object");
  for (const auto& [key, value] : input.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) bad("unknown input '" + key + "'");
  }
}

std::string Input::string(const std::string& key) const {
  auto v = optional_string(key);
  if (!v) bad("'" + key + "' is required");
  return *v;
}

std::optional<std::string> Input::optional_string(const std::string& key) const {
  const auto it = input_.find(key);
  if (it == input_.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) bad("'" + key + "' must be a string");
  return it->get<std::string>();
}

std::optional<std::int64_t> Input::optional_integer(const std::string& key, std::int64_t min, std::int64_t max) const {
  const auto it = input_.find(key);
  if (it == input_.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) bad("'" + key + "' must be an integer");
  const auto v = it->get<std::int64_t>();
  if (v < min || v > max) bad("'" + key + "' must be between " + std::to_string(min) + " and " + std::to_string(max));
  return v;
}

std::map<std::string, std::string> Input::string_map(const std::string& key) const {
  std::map<std::string, std::string> out;
  const auto it = input_.find(key);
  if (it == input_.end() || it->is_null()) return out;
  if (!it->is_object()) bad("'" + key + "' must be an object of strings");
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) bad("'" + key + "." + k + "' must be a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = sequence_at(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = sequence_at(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string clip_middle(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  const std::size_t head = char_start(text, max / 2);
  const std::size_t tail = char_start(text, text.size() - (max - max / 2));
  const std::size_t left_out = tail - head;
  return std::string(text.substr(0, head)) + "\n[... " + std::to_string(left_out) + " bytes left out ...]\n" +
         std::string(text.substr(tail));
}

std::string base64(std::string_view bytes) { return detail::base64_encode(bytes); }

std::string unbase64(std::string_view text) {
  auto bytes = detail::base64_decode(text);
  if (!bytes) bad("the content is not base64");
  return std::move(*bytes);
}

}  // namespace mayura::tool_json
