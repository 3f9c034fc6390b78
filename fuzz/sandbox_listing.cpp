// The listing a command-only provider's sandbox sends back for `list`
// (sandbox_scripts::list), which the sandbox's own processes can forge.
// Properties: a malformed listing is SandboxError(INTERNAL), never a crash;
// every entry that comes out has a name the contract allows.

#include "fuzz.hpp"
#include "mayura/errors.hpp"
#include "mayura/sandbox_scripts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<mayura::FileEntry> entries;
  try {
    entries = mayura::parse_sandbox_listing(mayura::fuzz::bytes(data, size));
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INTERNAL);
    return 0;
  }
  mayura::fuzz::accept();
  for (const auto& e : entries) {
    FUZZ_CHECK(!e.name.empty() && e.name != "." && e.name != "..");
    FUZZ_CHECK(e.name.find('/') == std::string::npos && e.name.find('\0') == std::string::npos);
  }
  return 0;
}
