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

// Throws ProfileError unless `program` looks like what libseccomp makes: the
// arch loaded first, a return last.
void check_shape(const Program& program);

// The syscall's number on the native arch; libseccomp may not know the
// newest names, which have `unified_nr` on every arch (-1: none). Negative:
// not on this arch.
int resolve(const char* name, int unified_nr = -1);

// Adds one rule. Throws ProfileError naming the syscall.
void add_rule(Filter& f, std::uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> args, const char* name);

// Any of these in clone's flags makes a namespace, which a sandboxed command
// may not do.
constexpr std::uint64_t kNamespaceFlags = 0x00020000 /* NEWNS */ | 0x04000000 /* NEWUTS */ | 0x08000000 /* NEWIPC */ |
                                          0x10000000 /* NEWUSER */ | 0x20000000 /* NEWPID */ | 0x40000000 /* NEWNET */ |
                                          0x02000000 /* NEWCGROUP */ | 0x00000080 /* NEWTIME */;
constexpr std::uint32_t kAfVsock = 40;  // named here so no vsock header is needed

}  // namespace mayura::seccomp::detail
