#pragma once
// What the tools need of JSON beyond nlohmann's: checking a model's input
// against the little schema the tools use, and making any bytes valid text
// for a result.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::tool_json {

// A model's input: an object whose keys are all known. Every getter throws
// SandboxError(INVALID_INPUT) naming the key and what it should be.
class Input {
 public:
  Input(const nlohmann::json& input, const std::vector<std::string>& known);
  std::string string(const std::string& key) const;
  std::optional<std::string> optional_string(const std::string& key) const;
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min, std::int64_t max) const;
  std::map<std::string, std::string> string_map(const std::string& key) const;

 private:
  const nlohmann::json& input_;
};

// `bytes` as valid UTF-8: each byte that is not part of a valid sequence
// becomes U+FFFD, so a result can always be serialized.
std::string valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

// At most `max` bytes of `text`: the start and the end, with a line saying
// how much of the middle was left out. Cuts fall between UTF-8 characters.
std::string clip_middle(std::string_view text, std::size_t max);

std::string base64(std::string_view bytes);
// Throws SandboxError(INVALID_INPUT) if `text` is no base64.
std::string unbase64(std::string_view text);

}  // namespace mayura::tool_json
