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

}  // namespace mayura::seccomp::detail
