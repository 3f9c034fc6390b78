// Building a libseccomp filter and exporting it as BPF bytes.

#include "filter.hpp"

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
    if (n <= 0) throw ProfileError(std::string("reading the exported filter: ") + (n < 0 ? std::strerror(errno) : "short read"));
    done += static_cast<std::size_t>(n);
  }
  return out;
}

void allow_unless_low32(Filter& filter, int nr, unsigned arg, std::initializer_list<std::uint32_t> excluded) {
  if (excluded.size() != 1 && excluded.size() != 2) throw ProfileError("allow_unless_low32 takes one or two values");
  const std::uint32_t a = *excluded.begin();
  const std::uint32_t b = *(excluded.end() - 1);
  // Each rule is (arg & mask) == datum, choosing bits so that neither a nor b
  // matches; together they cover every other 32-bit value.
  struct Bits {
    std::uint64_t mask, datum;
  };
  std::vector<Bits> rules;
  const std::uint32_t differ = a ^ b;
  for (unsigned bit = 0; bit < 32; ++bit) {
    const std::uint32_t m = 1U << bit;
    // A bit where a and b agree: x differs from both when it has the other value.
    if ((differ & m) == 0) rules.push_back({m, ~a & m});
  }
  // Where a and b differ, x agrees with each on some of those bits; x is
  // neither when, for a pivot bit p and another differing bit q, it agrees
  // with a on p and with b on q, or the other way round.
  unsigned pivot = 32;
  for (unsigned bit = 0; bit < 32; ++bit) {
    const std::uint32_t q = 1U << bit;
    if ((differ & q) == 0) continue;
    if (pivot == 32) {
      pivot = bit;
      continue;
    }
    const std::uint32_t p = 1U << pivot;
    rules.push_back({p | q, (a & p) | (b & q)});
    rules.push_back({p | q, (b & p) | (a & q)});
  }
  for (const Bits& r : rules) {
    scmp_arg_cmp cmp{arg, SCMP_CMP_MASKED_EQ, r.mask, r.datum};
    if (int rc = seccomp_rule_add_array(filter.get(), SCMP_ACT_ALLOW, nr, 1, &cmp); rc < 0)
      throw ProfileError("libseccomp refused a rule for syscall " + std::to_string(nr) + ": " + error_text(rc));
  }
}

}  // namespace mayura::seccomp::detail
