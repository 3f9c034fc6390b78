#pragma once
// What goes wrong with images, by kind, so callers can give the right reason.

#include <stdexcept>
#include <string>

namespace mayura::rootfs {

class ImageError : public std::runtime_error {
 public:
  enum class Kind {
    not_found,    // no such image (or directory)
    bad_input,    // a name or option that is wrong
    bad_archive,  // the archive is malformed, incomplete, unsafe or does not match its digests
    store,        // the store itself failed (disk full, permissions)
    unsupported,  // the store's file system cannot serve images (no idmapped mounts)
  };
  ImageError(const std::string& what, Kind kind) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

}  // namespace mayura::rootfs
