#pragma once
// Where the engine keeps snapshots: one file per snapshot, a copy of a
// sandbox's disk (an ext4 image), under a directory per owner (the create's
// tenant, hex-encoded: any string is a safe directory name then).
//
// A snapshot is written to a new, unnamed-looking file first (".tmp-…",
// locked while it is written), synced, then renamed over its name and the
// directory synced: a crash at any point leaves the old snapshot or the new,
// and at worst a temporary file that no writer holds any more, which the
// next engine removes.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/types.hpp"

namespace mayura::native {

// Copies `size` bytes of `from` into `to` (both regular files, `to` empty):
// a clone of its blocks where the host's file system shares them (XFS,
// btrfs), else only the ranges that hold data, so that a disk's unwritten
// space stays a hole. Throws SandboxError naming the step; GONE once
// `stopped` (asked between pieces of at most 64 MiB) says so.
void copy_disk_file(int from, int to, std::uint64_t size, const std::function<bool()>& stopped = {});
// The clone alone: false (and `to` untouched) where the host's file system
// cannot share blocks. At once, whatever the file's size: a copy that sees
// the file as it was at one moment.
bool clone_disk_file(int from, int to);

class SnapshotStore {
 public:
  explicit SnapshotStore(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  // The file of `owner`'s snapshot `name` (which the engine checks again:
  // one component, no dot first).
  std::string path(const std::string& owner, const std::string& name) const;
  // The snapshot's file, opened for reading; NOT_FOUND if there is none.
  UniqueFd open(const std::string& owner, const std::string& name) const;
  std::vector<Snapshot> list(const std::string& owner) const;
  // NOT_FOUND if there is none. A create copying it meanwhile goes on with
  // the file it opened.
  void remove(const std::string& owner, const std::string& name) const;
  // Writes `owner`'s snapshot `name`: `fill` copies into the file it is
  // given, then the file is synced and renamed over the name.
  Snapshot write(const std::string& owner, const std::string& name, const std::function<void(int file)>& fill) const;
  // Removes the temporary files of writers that died (no lock held on
  // them). Never throws.
  void remove_orphans() const noexcept;

 private:
  std::string owner_dir(const std::string& owner) const;
  std::string dir_;
};

}  // namespace mayura::native
