#pragma once
// Images: where a sandbox's read-only file system comes from.
//   "host" (or empty): the host's system directories, without its secrets
//   "/abs/dir":        a directory that holds a root file system
//   "name":            <image_dir>/name (or <image_dir>/name/rootfs)

#include <stdexcept>
#include <string>
#include <vector>

#include "mayura/rootfs/image_error.hpp"
#include "mayura/rootfs/plan.hpp"

namespace mayura::rootfs {

struct Image {
  std::string name;  // as asked for
  std::string root;  // the host directory that is the image's root ("/" for host); empty for a stored image
  bool host = false;
  std::vector<std::string> layers;  // a stored image's layer directories, bottom first
};

// Finds the image; throws ImageError if it is not usable.
Image resolve_image(const std::string& image, const std::string& image_dir);

// The whole plan for a sandbox on `image`.
Plan plan_for(const Image& image, const RootOptions& options);

}  // namespace mayura::rootfs
