#include "digest.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace mayura::rootfs {

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: init failed");
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t size) {
  if (size) EVP_DigestUpdate(ctx_->md, data, size);
}

std::string Sha256::digest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, out, &len);
  return "sha256:" + hex_of(out, len);
}

std::string sha256_digest(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.digest();
}

bool is_sha256_digest(std::string_view digest) {
  if (digest.size() != 71 || digest.substr(0, 7) != "sha256:") return false;
  for (char c : digest.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace mayura::rootfs
