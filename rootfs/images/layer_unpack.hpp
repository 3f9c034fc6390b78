#pragma once
// One layer's tar, unpacked into a directory of the store in the form
// overlayfs reads as a lower layer: whiteouts become 0/0 character devices,
// opaque directories carry user.overlay.opaque (the engine mounts with
// userxattr, as an overlay mounted inside a user namespace must).
//
// Whatever the archive holds, nothing is written outside the directory: no
// '..' component is taken, no parent is reached through a symlink, a link
// target is checked, device nodes are dropped and setuid/setgid bits
// cleared. Ownership, modes and times are kept.

#include <cstdint>

struct archive;

namespace mayura::rootfs {

struct UnpackLimits {
  std::uint64_t max_bytes = 64ull << 30;  // of file contents, as declared by the headers
  std::uint64_t max_entries = 4u << 20;
  std::uint64_t max_path = 4096;
};

struct LayerStats {
  std::uint64_t bytes = 0;  // file contents written
  std::uint64_t entries = 0;
  std::uint64_t dropped = 0;  // device nodes and sockets left out
  std::uint64_t cleared = 0;  // setuid/setgid bits cleared
};

// Reads every entry of `tar` (a libarchive tar reader at its start) into the
// empty directory `root` (an fd). Throws ImageError(bad_archive) naming the
// entry at fault, or ImageError(store) when the disk fails us.
LayerStats unpack_layer(archive* tar, int root, const UnpackLimits& limits);

}  // namespace mayura::rootfs
