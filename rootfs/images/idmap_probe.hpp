#pragma once
// Whether a directory's file system can be mounted with an id mapping, as a
// sandbox mounts the store's layers (tmpfs could not before Linux 6.3, nor
// can many network file systems): asked at import, so that a store no
// sandbox could run from says so before anything is unpacked into it.

#include <string>

namespace mayura::rootfs {

// 0 if `dir` can be mounted idmapped; else the errno the kernel gave.
int idmap_error(const std::string& dir);

}  // namespace mayura::rootfs
