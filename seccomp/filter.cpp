// Building a libseccomp filter and exporting it as BPF bytes.

#include "filter.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace mayura::seccomp::detail {
namespace {

std::string error_text(int negative_errno) { return std::strerror(-negative_errno); }

// The memfd the BPF is exported into.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Filter::Filter(std::uint32_t default_action) : ctx_(seccomp_init(default_action)) {
  if (!ctx_) throw ProfileError("libseccomp refused the default action");
}

void Filter::set_attr(scmp_filter_attr attr, std::uint32_t value, const char* what) {
  if (int rc = seccomp_attr_set(get(), attr, value); rc < 0)
    throw ProfileError(std::string("libseccomp refused ") + what + ": " + error_text(rc));
}

Program Filter::export_bpf() const {
  // libseccomp 2.5 exports only to a file descriptor.
  Fd mem{::memfd_create("mayura-seccomp", MFD_CLOEXEC)};
  if (mem.fd < 0) throw ProfileError(std::string("memfd_create: ") + std::strerror(errno));
  if (int rc = seccomp_export_bpf(get(), mem.fd); rc < 0)
    throw ProfileError("libseccomp could not export the filter: " + error_text(rc));
  off_t end = ::lseek(mem.fd, 0, SEEK_END);
  if (end < 0) throw ProfileError(std::string("lseek: ") + std::strerror(errno));
  auto size = static_cast<std::size_t>(end);
  if (size == 0 || size % sizeof(sock_filter) != 0)
    throw ProfileError("libseccomp exported " + std::to_string(size) + " bytes, not whole BPF instructions");
  if (size / sizeof(sock_filter) > BPF_MAXINSNS)
    throw ProfileError("the filter has " + std::to_string(size / sizeof(sock_filter)) +
                       " BPF instructions; the kernel accepts at most " + std::to_string(BPF_MAXINSNS));
  Program out(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(mem.fd, out.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw ProfileError(std::string("reading the exported filter: ") + (n < 0 ? std::strerror(errno) : "short read"));
    done += static_cast<std::size_t>(n);
  }
  check_shape(out);
  return out;
}

void check_shape(const Program& program) {
  // Every program libseccomp makes starts by loading the arch and ends in a
  // return. One that does not is not what was asked for (libseccomp before
  // 2.6.1 can wrap its instruction count on huge filters and export a slice
  // from the middle): refused rather than installed.
  sock_filter first{}, last{};
  std::memcpy(&first, program.data(), sizeof first);
  std::memcpy(&last, program.data() + program.size() - sizeof last, sizeof last);
  if (first.code != (BPF_LD | BPF_W | BPF_ABS) || first.k != offsetof(seccomp_data, arch) ||
      BPF_CLASS(last.code) != BPF_RET) {
    throw ProfileError("libseccomp exported a malformed filter");
  }
}

int resolve(const char* name, int unified_nr) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return unified_nr;
  return nr;  // negative: a pseudo number, the syscall does not exist on this arch
}

void add_rule(Filter& f, std::uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> args, const char* name) {
  const int rc = seccomp_rule_add_array(f.get(), action, nr, static_cast<unsigned>(args.size()), args.begin());
  if (rc < 0) throw ProfileError(std::string("libseccomp refused the rule for ") + name + ": " + error_text(rc));
}

}  // namespace mayura::seccomp::detail
