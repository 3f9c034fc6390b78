#pragma once
// The image store, for hosts that import images themselves (mayura-run's
// `image` commands use it too). Images come from archives only: a `docker
// save` archive or an OCI image layout archive (`skopeo copy … oci-archive:`),
// tar, gzip or zstd layers. A sandbox names one as CreateOptions::image =
// "NAME[:TAG]"; NativeOptions::image_store says where the store is.
//
//   mayura::ImageStore store("/var/lib/mayura/store");
//   store.import_archive("alpine.tar", "alpine:3.22");
//
// Failures are SandboxError: INVALID_INPUT for a bad archive or name (the
// store is left as it was), NOT_FOUND for an image the store does not have,
// INTERNAL when the store's disk fails.

#include <functional>
#include <string>
#include <vector>

#include "mayura/rootfs/image_store.hpp"

namespace mayura {

using ImageInfo = rootfs::StoredImage;
using ImageImportProgress = rootfs::ImportProgress;
using ImageImportResult = rootfs::ImportResult;
using ImageRemoveResult = rootfs::RemoveResult;

class ImageStore {
 public:
  explicit ImageStore(std::string dir = "/var/lib/mayura/store");

  // Imports the archive's images under their own names, or its one image
  // under `name` (NAME[:TAG]) when it is not empty.
  ImageImportResult import_archive(const std::string& path, const std::string& name = {},
                                   const std::function<void(const ImageImportProgress&)>& progress = {});
  std::vector<ImageInfo> list() const;
  // By NAME[:TAG] or id.
  ImageInfo inspect(const std::string& name) const;
  // Removes the name; the image and its layers go when nothing else needs them.
  ImageRemoveResult remove(const std::string& name);

 private:
  rootfs::ImageStore store_;
};

}  // namespace mayura
