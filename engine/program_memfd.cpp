#include "program_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sys_error.hpp"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

namespace mayura {

UniqueFd program_memfd(const char* name, const char* begin, const char* end) {
  const std::string what = std::string("the ") + name + " memfd";
  // MFD_EXEC is needed where vm.memfd_noexec is set, and unknown to kernels before 6.3.
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC));
  if (!fd && errno == EINVAL) fd.reset(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) fail_step("making " + what, errno, Reason::UNSUPPORTED);
  const char* p = begin;
  while (p < end) {
    const ssize_t n = ::write(fd.get(), p, static_cast<std::size_t>(end - p));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_step("writing " + what, errno);
    }
    p += n;
  }
  check_sys(::fchmod(fd.get(), 0555), "making " + what + " read-only");
  check_sys(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE),
            "sealing " + what);
  return fd;
}

}  // namespace mayura
