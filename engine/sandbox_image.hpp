#pragma once
// What a create's `image` gives the sandbox: the root file system, and for
// an image from the store its config (Env, WorkingDir, User) and a lock
// that keeps its layers in the store while the sandbox runs.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "mayura/base/unique_fd.hpp"
#include "mayura/native.hpp"
#include "mayura/rootfs/image.hpp"
#include "mayura/types.hpp"

namespace mayura {

struct SandboxImage {
  rootfs::Image image;
  std::string workdir;               // empty: the engine's
  std::optional<std::uint32_t> uid;  // the image's User, when it names one
  std::optional<std::uint32_t> gid;
  std::string user_name;                   // for USER and LOGNAME, when known
  std::map<std::string, std::string> env;  // the image's Env
  UniqueFd hold;                           // a shared lock of the stored image
};

// The create's image: "host" (or empty), an absolute directory, NAME[:TAG]
// of the store, or a directory by name under image_dir; with the create's
// user and workdir over the image's. Throws SandboxError(INVALID_CONFIG)
// for an image that is not there or a user or workdir it cannot run with.
SandboxImage resolve_sandbox_image(const CreateOptions& create, const NativeOptions& options);

}  // namespace mayura
