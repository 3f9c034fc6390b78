#pragma once
// A stored image's layers, as the sandbox's init mounts them: each layer's
// directory cloned and idmapped with the sandbox's own user namespace, so
// the image's owners show inside as the image says (root as root, the app
// user as itself). On the host the layers' files carry the image's own ids
// too (host uid 1000 owns an image's uid-1000 files); the store's 0700
// directory keeps host users out of them.
// Done by the engine: only host root may idmap a mount of the host's
// file systems.

#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/rootfs/plan.hpp"

namespace mayura {

// The detached mounts of the plan's image_layers op, bottom first (none if
// the plan has none). `proc` is the init's /proc/<pid> directory, after its
// id maps are written. Throws SandboxError naming the step.
std::vector<UniqueFd> idmapped_layers(int proc, const rootfs::Plan& plan);

// The sandbox's disk (a detached ext4 mount) idmapped the same way, so its
// files keep the ids the sandbox gave them whichever id range it runs in.
void idmap_disk(int proc, int mount);

}  // namespace mayura
