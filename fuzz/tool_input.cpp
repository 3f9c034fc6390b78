// What the tools take from a model: its JSON input, checked against the
// tools' little schema, and the bytes the tools turn into text for results.
// Properties: bad input is SandboxError(INVALID_INPUT); base64 round-trips;
// what valid_utf8 gives is valid UTF-8, and valid input comes back as is;
// clip_middle keeps to its bound (plus its one line) and to valid UTF-8.

#include <nlohmann/json.hpp>

#include "fuzz.hpp"
#include "mayura/errors.hpp"
#include "tool_json.hpp"

namespace tj = mayura::tool_json;

namespace {

void check_input(std::string_view text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return;
  // Accepted: an input one of the two schemas takes whole.
  try {
    const tj::Input input(json, {"command", "path", "content", "cwd", "env", "timeoutMs", "offset"});
    (void)input.string("command");
    mayura::fuzz::accept();
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT);
  }
  try {
    const tj::Input input(json, {"path", "cwd", "env", "timeoutMs"});
    (void)input.optional_string("path");
    (void)input.optional_integer("timeoutMs", 1, 3'600'000);
    (void)input.string_map("env");
    (void)input.optional_string("cwd");
    mayura::fuzz::accept();
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = mayura::fuzz::bytes(data, size);
  check_input(bytes);

  FUZZ_CHECK(tj::unbase64(tj::base64(bytes)) == bytes);
  try {
    (void)tj::unbase64(bytes);
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT);
  }

  const std::string text = tj::valid_utf8(bytes);
  FUZZ_CHECK(tj::is_valid_utf8(text));
  if (tj::is_valid_utf8(bytes)) FUZZ_CHECK(text == bytes);
  const std::size_t max = size % 97;
  const std::string clipped = tj::clip_middle(text, max);
  if (text.size() <= max) FUZZ_CHECK(clipped == text);
  FUZZ_CHECK(clipped.size() <= max + 48);
  FUZZ_CHECK(tj::is_valid_utf8(clipped));
  return 0;
}
