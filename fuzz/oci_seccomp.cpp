// OCI seccomp profiles (the JSON a caller hands CreateOptions), compiled by
// libseccomp. Properties: a profile that is refused is ProfileError; one
// that compiles is a whole BPF program the kernel would take in size.

#include <linux/filter.h>

#include "fuzz.hpp"
#include "mayura/seccomp/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto program = mayura::seccomp::compile_oci(mayura::fuzz::bytes(data, size));
    mayura::fuzz::accept();
    FUZZ_CHECK(!program.empty() && program.size() % sizeof(sock_filter) == 0);
    FUZZ_CHECK(program.size() / sizeof(sock_filter) <= BPF_MAXINSNS);
  } catch (const mayura::seccomp::ProfileError&) {
  }
  return 0;
}
