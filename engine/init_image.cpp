#include "init_image.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sys_error.hpp"

extern "C" const char mayura_init_blob[];
extern "C" const char mayura_init_blob_end[];

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

namespace mayura {

UniqueFd make_init_memfd() {
  // MFD_EXEC is needed where vm.memfd_noexec is set, and unknown to kernels before 6.3.
  UniqueFd fd(::memfd_create("mayura-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC));
  if (!fd && errno == EINVAL) fd.reset(::memfd_create("mayura-init", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) fail_step("making the init's memfd", errno, Reason::UNSUPPORTED);
  const char* p = mayura_init_blob;
  while (p < mayura_init_blob_end) {
    const ssize_t n = ::write(fd.get(), p, static_cast<std::size_t>(mayura_init_blob_end - p));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_step("writing the init's memfd", errno);
    }
    p += n;
  }
  check_sys(::fchmod(fd.get(), 0555), "making the init's memfd read-only");
  check_sys(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE),
            "sealing the init's memfd");
  return fd;
}

}  // namespace mayura
