// The syscall policy of a sandbox: the built-in default profile and OCI/Docker
// JSON profiles, compiled to classic BPF, and the raw call that installs one.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mayura::seccomp {

// A compiled classic-BPF program: the bytes of an array of struct sock_filter
// (size a multiple of 8), as exported by libseccomp for the native arch.
using Program = std::string;

struct ProfileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The built-in profile: an allowlist at least as strict as Docker's default
// for a container with Docker's default capabilities. Everything not allowed
// fails with EPERM (clone3 with ENOSYS, so libc falls back to clone).
Program compile_default();

// The same profile as the library's build compiled it: no libseccomp work
// at run time.
Program default_program();

// What no profile may give a sandboxed command: namespaces, mounts, bpf,
// io_uring, keys, modules, kexec, other arches' entry points, TIOCSTI,
// vsock and the like, refused; everything else allowed. Installed under
// every OCI profile, so that no profile reopens them.
Program compile_baseline();
// The same, as the library's build compiled it.
Program baseline_program();

// An OCI/Docker JSON profile. Throws ProfileError naming what is wrong.
Program compile_oci(std::string_view text);

// Installs a program in the calling thread. Needs no_new_privs (or
// CAP_SYS_ADMIN). Returns 0, or -1 with errno. Kernel calls only, so the
// static in-sandbox init can use it without libseccomp or exceptions.
inline int install(const char* bytes, std::size_t size) noexcept {
  if (bytes == nullptr || size == 0 || size % sizeof(sock_filter) != 0 || size / sizeof(sock_filter) > BPF_MAXINSNS) {
    errno = EINVAL;
    return -1;
  }
  // The kernel copies the program; it never writes through this pointer.
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(size / sizeof(sock_filter));
  prog.filter = reinterpret_cast<sock_filter*>(const_cast<char*>(bytes));
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0U, &prog) == 0) return 0;
  if (errno != ENOSYS) return -1;
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0UL, 0UL) == 0 ? 0 : -1;
}

}  // namespace mayura::seccomp
