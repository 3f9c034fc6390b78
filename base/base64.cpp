#include "mayura/base/base64.hpp"

#include <array>
#include <cstdint>

namespace mayura::detail {
namespace {

constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::int8_t kSkip = -2;
constexpr std::int8_t kBad = -1;

constexpr std::array<std::int8_t, 256> make_values() {
  std::array<std::int8_t, 256> v{};
  for (auto& x : v) x = kBad;
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    v[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  for (char c : {'\n', '\r', ' ', '\t'}) v[static_cast<unsigned char>(c)] = kSkip;
  return v;
}
constexpr auto kValues = make_values();

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t at) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(group >> shift) & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    const std::uint32_t group = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out.push_back(kAlphabet[(group >> 18) & 63]);
    out.push_back(kAlphabet[(group >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(group >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t group = 0;
  int held = 0;     // sextets in `group`
  int padding = 0;  // '=' seen; only more '=' and blanks may follow
  for (char c : text) {
    if (c == '=') {
      ++padding;
      continue;
    }
    const std::int8_t v = kValues[static_cast<unsigned char>(c)];
    if (v == kSkip) continue;
    if (v == kBad || padding > 0) return std::nullopt;
    group = group << 6 | static_cast<std::uint32_t>(v);
    if (++held == 4) {
      out.push_back(static_cast<char>(group >> 16));
      out.push_back(static_cast<char>(group >> 8 & 0xff));
      out.push_back(static_cast<char>(group & 0xff));
      group = 0;
      held = 0;
    }
  }
  // What is left: 2 sextets give one byte, 3 give two, with the padding
  // that completes the quartet (or none at all).
  if (held == 1 || (padding > 0 && held + padding != 4) || padding > 2) return std::nullopt;
  if (held == 2) out.push_back(static_cast<char>(group >> 4));
  if (held == 3) {
    out.push_back(static_cast<char>(group >> 10));
    out.push_back(static_cast<char>(group >> 2 & 0xff));
  }
  return out;
}

}  // namespace mayura::detail
