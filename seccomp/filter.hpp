// A libseccomp filter under construction, released on every path, and its
// export to BPF. Internal to mayura_seccomp.
#pragma once

#include <seccomp.h>

#include <cstdint>
#include <initializer_list>
#include <memory>

#include "mayura/seccomp/profile.hpp"

namespace mayura::seccomp::detail {

class Filter {
 public:
  // Throws ProfileError if libseccomp refuses the default action.
  explicit Filter(std::uint32_t default_action);

  scmp_filter_ctx get() const { return ctx_.get(); }
  // Throws ProfileError naming the attribute.
  void set_attr(scmp_filter_attr attr, std::uint32_t value, const char* what);
  // The BPF of the native arch (and any arches added), checked to fit the
  // kernel's limit. Throws ProfileError.
  Program export_bpf() const;

 private:
  struct Release {
    void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
  };
  std::unique_ptr<void, Release> ctx_;
};

// Adds ALLOW rules for syscall nr that match exactly when the low 32 bits of
// argument arg are none of the given values (one or two of them). For
// arguments the kernel reads as 32-bit ints: setting upper bits changes
// nothing. libseccomp refuses an ERRNO(EPERM) rule under an ERRNO(EPERM)
// default, so the exception is the complement written as a union of
// masked-equal rules, each excluding all the values. Throws ProfileError.
void allow_unless_low32(Filter& filter, int nr, unsigned arg, std::initializer_list<std::uint32_t> excluded);

}  // namespace mayura::seccomp::detail
