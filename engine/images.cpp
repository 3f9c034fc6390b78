#include "mayura/images.hpp"

#include "mayura/errors.hpp"

namespace mayura {
namespace {

[[noreturn]] void rethrow(const rootfs::ImageError& e) {
  using Kind = rootfs::ImageError::Kind;
  switch (e.kind()) {
    case Kind::not_found: throw SandboxError(Reason::NOT_FOUND, e.what());
    case Kind::bad_input:
    case Kind::bad_archive: throw SandboxError(Reason::INVALID_INPUT, e.what());
    case Kind::unsupported: throw SandboxError(Reason::UNSUPPORTED, e.what());
    case Kind::store: break;
  }
  throw SandboxError(Reason::INTERNAL, e.what());
}

template <typename Fn>
auto guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const rootfs::ImageError& e) {
    rethrow(e);
  } catch (const SandboxError&) {
    throw;
  } catch (const std::exception& e) {
    throw SandboxError(Reason::INTERNAL, std::string("the image store failed: ") + e.what());
  }
}

}  // namespace

ImageStore::ImageStore(std::string dir) : store_(guarded([&] { return rootfs::ImageStore(std::move(dir)); })) {}

ImageImportResult ImageStore::import_archive(const std::string& path, const std::string& name,
                                             const std::function<void(const ImageImportProgress&)>& progress) {
  std::optional<rootfs::ImageReference> ref;
  if (!name.empty()) {
    std::string why;
    ref = rootfs::parse_image_reference(name, &why);
    if (!ref) throw SandboxError(Reason::INVALID_INPUT, "'" + name.substr(0, 100) + "' is not an image name: " + why);
  }
  return guarded([&] { return store_.import(path, ref, progress); });
}

std::vector<ImageInfo> ImageStore::list() const {
  return guarded([&] { return store_.list(); });
}

ImageInfo ImageStore::inspect(const std::string& name) const {
  return guarded([&] {
    auto image = store_.find(name);
    if (!image) {
      throw rootfs::ImageError("image '" + name.substr(0, 100) + "' is not in the store " + store_.dir(),
                               rootfs::ImageError::Kind::not_found);
    }
    return *image;
  });
}

ImageRemoveResult ImageStore::remove(const std::string& name) {
  return guarded([&] { return store_.remove(name); });
}

}  // namespace mayura
