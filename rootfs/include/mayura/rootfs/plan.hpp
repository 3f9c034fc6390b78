#pragma once
// A sandbox's root file system, as an ordered list of small setup steps
// (bubblewrap's idea). The engine writes the plan from an image; the
// in-sandbox init carries it out with mount_tree::build.

#include <cstdint>
#include <string>
#include <vector>

namespace mayura::rootfs {

enum class OpKind : std::uint32_t {
  bind = 1,           // src (a host path) onto dst, read-only unless kWritable
  mkdir = 2,          // dst, mode
  symlink = 3,        // dst -> data
  file = 4,           // dst with contents data, mode (in the root tmpfs)
  tmpfs = 5,          // a tmpfs on dst: size, inodes, mode, uid, gid
  proc = 6,           // a procfs of the sandbox's pid namespace on dst
  devpts = 7,         // a private devpts on dst
  override_file = 8,  // a read-only file with contents data over the existing dst
  mask = 9,           // hide the existing dst: an empty read-only file or directory over it
  read_only = 10,     // the existing dst (and all below it) made read-only, noexec, nosuid, nodev
  // An image from the store: its layers (data: one host directory per line,
  // bottom first; the engine hands them over idmapped) merged by a read-only
  // overlay, whose top-level entries are bound into the root like a
  // directory image's, except the names in src ('/'-separated). With
  // kWritable, the engine hands one mount more after the layers, a disk's
  // top: the overlay's upper layer is its directory kDiskRoot, and the
  // entries are bound writable.
  image_layers = 11,
  // A file system the engine mounted and hands over (a sandbox's disk, made
  // and idmapped on the host: the sandbox's root could not), attached on
  // dst; with src, its directory src is (a clone of it). It comes after any
  // image's layers, in plan order.
  handed = 12,
};

enum OpFlags : std::uint32_t {
  kWritable = 1u << 0,
  kAllowDevices = 1u << 1,  // keep device nodes usable (for /dev/null and friends)
  kOptional = 1u << 2,      // skip if the source or target is not there
  kNoExec = 1u << 3,
  // A tmpfs over a directory the image fills: the image's entries stay
  // visible under it (an overlay, with the tmpfs as its upper layer).
  kKeepContents = 1u << 4,
};

struct Op {
  OpKind kind = OpKind::mkdir;
  std::uint32_t flags = 0;
  std::string src;
  std::string dst;  // absolute, inside the sandbox
  std::string data;
  std::uint32_t mode = 0755;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;
  std::uint64_t inodes = 0;
};

using Plan = std::vector<Op>;

// Sizes and names the plan needs from the engine's options.
// The directories of the engine's disks that a handed op names (its src):
// a sandbox's disk's workdir and /tmp, a volume's data.
inline constexpr char kDiskWorkspace[] = "workspace";
inline constexpr char kDiskTmp[] = "tmp";
inline constexpr char kVolumeData[] = "data";
// A writable root's overlay: its upper and work directories, under this one
// of the disk's top (made when missing: a disk from before has none).
inline constexpr char kDiskRoot[] = "root";

struct RootOptions {
  std::string workdir = "/workspace";
  std::string hostname = "sandbox";
  std::uint32_t uid = 1000;
  std::uint32_t gid = 1000;
  std::uint64_t workdir_bytes = 1024ull << 20;
  // The workdir and /tmp on a disk the engine hands over (two handed ops)
  // instead of tmpfs; it starts empty, over whatever the image has there.
  bool workdir_on_disk = false;
  // An image from the store written over on that disk (image_layers with
  // kWritable); the disk's top is handed before the workdir's and /tmp's.
  bool root_on_disk = false;
  std::uint64_t tmp_bytes = 512ull << 20;
  std::uint64_t shm_bytes = 64ull << 20;
  std::uint64_t inodes = 262144;  // per writable tmpfs
  // /etc/resolv.conf: the engine's DNS, the same for every network kind.
  std::string resolv_conf = "# no network\n";
  // Where the engine's volumes go (a handed op each, after the workdir's
  // and /tmp's, in this order): absolute paths, checked already.
  std::vector<std::string> volumes;
};

}  // namespace mayura::rootfs
