#include "mayura/base/random_bytes.hpp"

#include <sys/random.h>

#include <cerrno>

namespace mayura {

int random_bytes(void* bytes, std::size_t size) noexcept {
  auto* at = static_cast<unsigned char*>(bytes);
  while (size > 0) {
    const ssize_t n = ::getrandom(at, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    at += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace mayura
