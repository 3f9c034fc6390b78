// An image archive as `docker save` or an OCI layout writes it, read for
// its manifests, configs and the layers they name. Properties: a bad
// archive is ImageError; one that reads names at least one image, each
// with layers whose entries are in the archive.

#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.hpp"
#include "image_archive.hpp"
#include "mayura/rootfs/image_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The archive reader takes a path: a memfd's, so nothing touches a disk.
  const int fd = ::memfd_create("mayura-fuzz-archive", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    FUZZ_CHECK(n > 0);
    done += static_cast<std::size_t>(n);
  }
  try {
    const mayura::rootfs::ImageArchive archive("/proc/self/fd/" + std::to_string(fd));
    mayura::fuzz::accept();
    FUZZ_CHECK(!archive.images().empty());
    for (const auto& image : archive.images()) {
      for (const auto& layer : image.layers) FUZZ_CHECK(!layer.entry.empty());
    }
  } catch (const mayura::rootfs::ImageError&) {
  }
  ::close(fd);
  return 0;
}
