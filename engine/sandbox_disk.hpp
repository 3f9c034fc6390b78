#pragma once
// A sandbox's disk: its working directory and /tmp on a file system of its
// own (the directories "workspace" and "tmp" of its top one), an ext4 made
// in a file under the engine's disk directory, or copied from a snapshot,
// attached to a loop device and mounted by the engine (the sandbox's root
// could do neither).
// Its size is its quota, which the kernel enforces: past it, a write inside
// fails ENOSPC, and the file's blocks were reserved on the host beforehand,
// so nothing the sandbox writes can fill the host's disk. The file is removed
// when the disk goes; the loop device lets go of it when the last mount of
// the file system goes with the sandbox's mount namespace.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/errors.hpp"

namespace mayura::native {

// Removes the disks in `dir` that no sandbox uses: those no loop device is
// bound to, made more than `grace` ago (a disk being made has no loop
// device yet). An engine that died left them; a live engine's disks are
// bound. Never throws.
void remove_orphan_disks(const std::string& dir, std::chrono::seconds grace = std::chrono::seconds(60)) noexcept;

// The ext4 in `file`, attached to a loop device and mounted, detached (no
// path reaches it): read-only if `read_only`. The loop device lets go of the
// file once the last mount goes. `unusable`: the reason when the kernel
// finds no ext4 there. Throws SandboxError naming the step. `device`, if
// given, gets the loop device's path.
UniqueFd mount_disk_file(int file, bool read_only, Reason unusable, std::string* device = nullptr);

// The files loop devices are bound to now, by the path each was bound by.
std::set<std::string> loop_bound_files();
// The loop device bound to `path` ("/dev/loopN"), or "" if none is.
std::string loop_device_of(const std::string& path);
// Waits (at most `bound`) until no loop device is bound to `path`: a
// sandbox's last mount of a disk gone, the kernel lets go of its device a
// moment later. False if one still is.
bool wait_unbound(const std::string& path, std::chrono::milliseconds bound);

// What a disk is copied from: a snapshot's file, or, for a new one of
// `mib`, its template (DiskTemplates).
struct DiskSource {
  std::uint64_t mib = 0;  // a new disk's size
  // The owner of a new disk's workspace, as the sandbox sees ids.
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  UniqueFd snapshot;   // a snapshot's file (its size is the disk's)
  UniqueFd made_like;  // a new disk's template, formatted once
};

class SandboxDisk {
 public:
  SandboxDisk() = default;
  // Makes `dir`/`name`.ext4 from `source`, attaches it and mounts it.
  // Throws SandboxError naming the step: LIMIT_REACHED when the host has no
  // room for it, UNSUPPORTED when the host has no loop devices,
  // INVALID_INPUT when a snapshot is not a sandbox's disk.
  SandboxDisk(const std::string& dir, const std::string& name, DiskSource source);
  // The disk at `path` that a sandbox an engine before this one made still
  // has mounted (live restore): found by its loop device and mounted once
  // more for this engine's own uses (sync, freeze, snapshots), and thawed,
  // should that engine have died while it was stopped. GONE if no loop
  // device holds it.
  static SandboxDisk existing(const std::string& path);
  SandboxDisk(SandboxDisk&& other) noexcept
      : path_(std::exchange(other.path_, {})),
        bytes_(std::exchange(other.bytes_, 0)),
        device_(std::exchange(other.device_, {})),
        device_number_(std::exchange(other.device_number_, 0)),
        mount_(std::move(other.mount_)),
        top_(std::move(other.top_)) {}
  SandboxDisk& operator=(SandboxDisk&& other) noexcept;
  SandboxDisk(const SandboxDisk&) = delete;
  SandboxDisk& operator=(const SandboxDisk&) = delete;
  ~SandboxDisk() { remove(); }

  explicit operator bool() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::uint64_t bytes() const { return bytes_; }
  // Its loop device's number, which its I/O bounds name.
  dev_t device_number() const { return device_number_; }
  // Detached mounts of its top, one for its workspace and one for its tmp
  // (the plan's handed ops name the directory), after one for a writable
  // root's upper layer if `with_root`, once: the launch idmaps them with
  // the sandbox's user namespace and hands them to the init.
  std::vector<UniqueFd> take_mounts(bool with_root);
  // Writes what the sandbox wrote so far out to its file, and the file out
  // to the host's disk (it may go on writing): a copy after it has only
  // what was written since to write out first.
  void sync() const;
  // Stops every write to the file system (FIFREEZE), having written it all
  // out and its journal into place: the file is then a clean ext4, which a
  // copy mounts with no journal to replay. Until thaw(), which never
  // throws; the engine thaws it on every way out.
  void freeze() const;
  void thaw() const noexcept;
  // With its processes stopped: writes what is left out, then the journal's
  // transactions into place (EXT4_IOC_CHECKPOINT), which leaves the journal
  // empty without stopping the file system. A clone of the file then is
  // what a crash would leave, its journal empty but still marked to be
  // replayed (so only a read-write mount takes it); anything the kernel
  // writes meanwhile is in the journal, which a copy replays as it mounts.
  // False where the kernel refuses the call (before 5.13; no journal).
  bool checkpoint() const;

 private:
  void remove() noexcept;
  std::string path_;
  std::uint64_t bytes_ = 0;
  std::string device_;  // its loop device
  dev_t device_number_ = 0;
  UniqueFd mount_;
  UniqueFd top_;  // its top directory, kept open to sync it
};

}  // namespace mayura::native
