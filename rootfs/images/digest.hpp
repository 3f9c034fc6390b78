#pragma once
// SHA-256, the digest every OCI and Docker archive names its blobs by.
// OpenSSL's, for its hardware paths: an import hashes every byte twice (as
// stored and unpacked).

#include <memory>
#include <string>
#include <string_view>

#include "mayura/base/hex.hpp"

namespace mayura::rootfs {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, std::size_t size);
  // "sha256:<64 hex digits>"; the hasher is done after this.
  std::string digest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string sha256_digest(std::string_view bytes);

// "sha256:<64 lower-case hex digits>" and nothing else.
bool is_sha256_digest(std::string_view digest);
inline std::string digest_hex(std::string_view digest) { return std::string(digest.substr(7)); }

}  // namespace mayura::rootfs
