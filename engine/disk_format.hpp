#pragma once
// A sandbox's disk: an ext4 file system made in a file of the engine's, with
// libext2fs (mke2fs's own library: the engine runs no program to do its work).
// The file's blocks are reserved on the host first, so a full disk inside is
// the sandbox's alone and never the host's.

#include <cstdint>
#include <string>
#include <vector>

namespace mayura::disk {

// A directory of the file system, its ids as the sandbox sees them.
struct Directory {
  std::string name;  // one component
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint32_t mode = 0755;  // permission bits only (07777)
};

struct FormatOptions {
  std::uint64_t bytes = 0;     // its size: at least 16 MiB
  std::uint32_t root_uid = 0;  // the owner of its top directory, as the sandbox sees ids
  std::uint32_t root_gid = 0;
  std::uint32_t root_mode = 0755;           // permission bits only (07777)
  std::vector<Directory> directories = {};  // made in the top directory
  // Its blocks reserved on the host now; false: a sparse file (a template,
  // copied into disks whose blocks are reserved then).
  bool reserve = true;
};

// Makes `path` (a new file: it must not exist) an ext4 file system of
// `options.bytes`. Throws SandboxError (mayura/errors.hpp) naming the step that
// failed: LIMIT_REACHED when the host has no room for it (ENOSPC/EDQUOT),
// INVALID_INPUT for a size under 16 MiB, a mode with more than permission
// bits or a directory's name that is not one plain component, INTERNAL otherwise. On failure the file is removed (a
// path that was already there is left as it was).
void format_ext4(const std::string& path, const FormatOptions& options);
// The same into `file`, an empty regular file open for writing (an
// O_TMPFILE, linked to its name once whole); nothing is removed on failure.
void format_ext4_into(int file, const FormatOptions& options);

}  // namespace mayura::disk
