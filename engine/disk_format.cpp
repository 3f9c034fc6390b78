#include "disk_format.hpp"

#include <et/com_err.h>  // struct error_table: libext2fs's own messages, without linking com_err
#include <ext2fs/ext2fs.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "mayura/base/unique_fd.hpp"
#include "mayura/errors.hpp"
#include "sys_error.hpp"

namespace mayura::disk {
namespace {

constexpr std::uint64_t kMinBytes = std::uint64_t{16} << 20;
constexpr std::uint32_t kLogBlockSize = 2;  // 1024 << 2: 4 KiB blocks, the page size
constexpr std::uint64_t kBlockSize = std::uint64_t{1024} << kLogBlockSize;
// mke2fs's defaults: an inode for every 16 KiB, 256-byte inodes (room for
// nanosecond and post-2038 times), flex groups of 16.
constexpr std::uint64_t kBytesPerInode = 16384;
constexpr std::uint16_t kInodeSize = 256;
constexpr std::uint8_t kLogGroupsPerFlex = 4;
// mke2fs's journal grows to 1 GiB on big file systems; a sandbox's disk is
// written by one tenant, and 16 MiB keeps most of a small disk its own.
constexpr std::uint64_t kMaxJournalBytes = std::uint64_t{16} << 20;
// e2fsck links what it finds into lost+found without allocating, so it is
// made big enough beforehand (mke2fs's 16 KiB).
constexpr std::uint32_t kLostFoundBytes = 16384;

const std::string kWhat = "making the sandbox's disk: ";

// libext2fs returns errnos as they are, and its own codes above them.
std::string ext2fs_message(errcode_t code) {
  const error_table& table = et_ext2_error_table;
  if (code >= table.base && code < table.base + table.n_msgs) return table.msgs[code - table.base];
  return "libext2fs error " + std::to_string(code);
}

[[noreturn]] void fail(const std::string& step, errcode_t code) {
  if (code > 0 && code < 4096) {
    const bool no_room = code == ENOSPC || code == EDQUOT;
    fail_step(kWhat + step, static_cast<int>(code), no_room ? Reason::LIMIT_REACHED : Reason::INTERNAL);
  }
  throw SandboxError(Reason::INTERNAL, kWhat + step + ": " + ext2fs_message(code));
}

void check(errcode_t code, const std::string& step) {
  if (code != 0) fail(step, code);
}

struct FreeFilesystem {
  void operator()(ext2_filsys fs) const noexcept { ext2fs_free(fs); }
};
using Filesystem = std::unique_ptr<struct_ext2_filsys, FreeFilesystem>;

// Until the file system is whole, the file is only ours to remove.
class RemoveUnlessKept {
 public:
  explicit RemoveUnlessKept(std::string path) : path_(std::move(path)) {}
  RemoveUnlessKept(const RemoveUnlessKept&) = delete;
  RemoveUnlessKept& operator=(const RemoveUnlessKept&) = delete;
  ~RemoveUnlessKept() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void keep() { path_.clear(); }

 private:
  std::string path_;
};

void check_options(const FormatOptions& options) {
  if (options.bytes < kMinBytes) {
    throw SandboxError(Reason::INVALID_INPUT, kWhat + "a disk of " + std::to_string(options.bytes) +
                                                  " bytes is under the 16 MiB a disk needs at least");
  }
  const auto check_mode = [](std::uint32_t mode, const std::string& whose) {
    if ((mode & ~07777U) != 0) {
      throw SandboxError(Reason::INVALID_INPUT,
                         kWhat + whose + " mode " + std::to_string(mode) + " has more than permission bits");
    }
  };
  check_mode(options.root_mode, "the top directory's");
  for (const Directory& dir : options.directories) {
    if (dir.name.empty() || dir.name == "." || dir.name == ".." || dir.name == "lost+found" ||
        dir.name.size() > EXT2_NAME_LEN || dir.name.find('/') != std::string::npos ||
        dir.name.find('\0') != std::string::npos) {
      throw SandboxError(Reason::INVALID_INPUT, kWhat + "\"" + dir.name + "\" is not a directory's name");
    }
    check_mode(dir.mode, "the directory " + dir.name + "'s");
  }
}

void fill_random(void* buffer, std::size_t size, const std::string& step) {
  auto* p = static_cast<unsigned char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::getrandom(p, size, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_step(kWhat + step, errno);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Reserving every block up front means the sandbox's writes never meet a full
// host disk, and that the file reads as zeros: its inode tables and journal
// need no writing (mke2fs's assume_storage_prezeroed).
void reserve(int fd, std::uint64_t bytes) {
  int error = 0;
  do {
    error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (error == EINTR);
  if (error != 0) {
    const bool no_room = error == ENOSPC || error == EDQUOT || error == EFBIG;
    fail_step(kWhat + "reserving its " + std::to_string(bytes) + " bytes on the host", error,
              no_room ? Reason::LIMIT_REACHED : Reason::INTERNAL);
  }
}

// mke2fs's ext4 (its mke2fs.conf defaults), less resize_inode: the engine
// grows no disk in place. Nothing is reserved for the host's root, whom the
// sandbox's processes never are.
ext2_super_block superblock_for(std::uint64_t bytes) {
  ext2_super_block param{};
  param.s_rev_level = EXT2_DYNAMIC_REV;
  param.s_log_block_size = kLogBlockSize;
  ext2fs_blocks_count_set(&param, bytes / kBlockSize);
  param.s_inodes_count = static_cast<std::uint32_t>(std::min<std::uint64_t>(bytes / kBytesPerInode, UINT32_MAX));
  param.s_inode_size = kInodeSize;
  param.s_log_groups_per_flex = kLogGroupsPerFlex;
  param.s_default_mount_opts = EXT2_DEFM_XATTR_USER | EXT2_DEFM_ACL;
  ext2fs_set_feature_xattr(&param);
  ext2fs_set_feature_dir_index(&param);
  ext2fs_set_feature_filetype(&param);
  ext2fs_set_feature_extents(&param);
  ext2fs_set_feature_64bit(&param);
  ext2fs_set_feature_flex_bg(&param);
  ext2fs_set_feature_sparse_super(&param);
  ext2fs_set_feature_large_file(&param);
  ext2fs_set_feature_huge_file(&param);
  ext2fs_set_feature_dir_nlink(&param);
  ext2fs_set_feature_extra_isize(&param);
  ext2fs_set_feature_metadata_csum(&param);
  return param;
}

// Through /proc/self/fd: libext2fs opens by name, and this name is the very
// file that was created and reserved, whatever becomes of its path meanwhile.
Filesystem initialize(int fd, std::uint64_t bytes) {
  ext2_super_block param = superblock_for(bytes);
  const std::string name = "/proc/self/fd/" + std::to_string(fd);
  ext2_filsys raw = nullptr;
  check(ext2fs_initialize(name.c_str(), EXT2_FLAG_64BITS, &param, unix_io_manager, &raw), "laying out its superblock");
  Filesystem fs(raw);

  ext2_super_block& super = *fs->super;
  fill_random(super.s_uuid, sizeof super.s_uuid, "drawing its UUID");
  super.s_uuid[6] = static_cast<std::uint8_t>((super.s_uuid[6] & 0x0F) | 0x40);  // a random (version 4) UUID
  super.s_uuid[8] = static_cast<std::uint8_t>((super.s_uuid[8] & 0x3F) | 0x80);
  fill_random(super.s_hash_seed, sizeof super.s_hash_seed, "drawing its directory hash seed");
  super.s_def_hash_version = EXT2_HASH_HALF_MD4;
  super.s_checksum_type = EXT2_CRC32C_CHKSUM;
  super.s_max_mnt_count = -1;       // no periodic checks: nobody would run them
  ext2fs_init_csum_seed(fs.get());  // the checksums are seeded with the UUID
  return fs;
}

// The tables read as zeros already: the kernel need not zero them after
// mounting (its lazy init thread), nor we before.
void mark_inode_tables_zeroed(ext2_filsys fs) {
  for (dgrp_t group = 0; group < fs->group_desc_count; ++group) {
    ext2fs_bg_flags_set(fs, group, EXT2_BG_INODE_ZEROED);
    ext2fs_group_desc_csum_set(fs, group);
  }
  // Zeros are no valid checksum: the special inodes are written with theirs.
  ext2_inode_large zero{};
  for (ext2_ino_t ino = 1; ino < EXT2_FIRST_INO(fs->super); ++ino) {
    check(ext2fs_write_inode_full(fs, ino, reinterpret_cast<ext2_inode*>(&zero), sizeof zero),
          "writing its special inodes");
  }
}

void set_owner_and_mode(ext2_filsys fs, ext2_ino_t ino, const Directory& dir) {
  const std::string what = dir.name.empty() ? std::string("its top directory") : "the directory " + dir.name;
  ext2_inode inode{};
  check(ext2fs_read_inode(fs, ino, &inode), "reading " + what);
  // Ids are 32 bits, kept in two 16-bit halves.
  inode.i_uid = static_cast<std::uint16_t>(dir.uid);
  inode.osd2.linux2.l_i_uid_high = static_cast<std::uint16_t>(dir.uid >> 16);
  inode.i_gid = static_cast<std::uint16_t>(dir.gid);
  inode.osd2.linux2.l_i_gid_high = static_cast<std::uint16_t>(dir.gid >> 16);
  inode.i_mode = static_cast<std::uint16_t>(LINUX_S_IFDIR | dir.mode);
  check(ext2fs_write_inode(fs, ino, &inode), "setting " + what + "'s owner and mode");
}

void make_root(ext2_filsys fs, const FormatOptions& options) {
  check(ext2fs_mkdir(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, nullptr), "making its top directory");
  set_owner_and_mode(fs, EXT2_ROOT_INO, {"", options.root_uid, options.root_gid, options.root_mode});
}

void make_directories(ext2_filsys fs, const std::vector<Directory>& directories) {
  for (const Directory& dir : directories) {
    check(ext2fs_mkdir(fs, EXT2_ROOT_INO, 0, dir.name.c_str()), "making the directory " + dir.name);
    ext2_ino_t ino = 0;
    check(ext2fs_lookup(fs, EXT2_ROOT_INO, dir.name.c_str(), static_cast<int>(dir.name.size()), nullptr, &ino),
          "finding the directory " + dir.name);
    set_owner_and_mode(fs, ino, dir);
  }
}

void make_lost_and_found(ext2_filsys fs) {
  static constexpr char kName[] = "lost+found";
  fs->umask = 077;  // e2fsck's finds are no one else's to read
  check(ext2fs_mkdir(fs, EXT2_ROOT_INO, 0, kName), "making lost+found");
  ext2_ino_t ino = 0;
  check(ext2fs_lookup(fs, EXT2_ROOT_INO, kName, static_cast<int>(sizeof kName - 1), nullptr, &ino),
        "finding lost+found");
  for (std::uint32_t size = fs->blocksize; size < kLostFoundBytes; size += fs->blocksize) {
    check(ext2fs_expand_dir(fs, ino), "growing lost+found");
  }
}

// The inodes below the first ordinary one are the file system's own (the
// journal's, the resize inode's, ...): taken, whether used or not, so that
// e2fsck finds them accounted for. The bad-block inode is written, empty.
void reserve_special_inodes(ext2_filsys fs) {
  for (ext2_ino_t ino = 1; ino < EXT2_FIRST_INO(fs->super); ++ino) {
    if (ino != EXT2_ROOT_INO) ext2fs_inode_alloc_stats2(fs, ino, +1, 0);
  }
  ext2fs_mark_ib_dirty(fs);
  check(ext2fs_update_bb_inode(fs, nullptr), "writing its bad-block inode");
}

void add_journal(ext2_filsys fs) {
  ext2fs_journal_params params{};
  check(ext2fs_get_journal_params(&params, fs), "sizing its journal");
  params.num_journal_blocks =
      std::min<blk_t>(params.num_journal_blocks, static_cast<blk_t>(kMaxJournalBytes / fs->blocksize));
  // LAZYINIT: its blocks read as zeros already. NO_MNT_CHECK: a new file is
  // mounted nowhere, and /proc/mounts need not be read to know it.
  check(ext2fs_add_journal_inode3(fs, &params, ~blk64_t{0}, EXT2_MKJOURNAL_LAZYINIT | EXT2_MKJOURNAL_NO_MNT_CHECK),
        "making its journal");
}

// Writes the superblock, its backups and the group descriptors, and syncs.
void finish(Filesystem fs) {
  ext2_filsys raw = fs.release();
  check(ext2fs_close_free(&raw), "writing its superblocks and group descriptors");
}

}  // namespace

void format_ext4(const std::string& path, const FormatOptions& options) {
  check_options(options);
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
  if (!fd) fail_step(kWhat + "creating " + path, errno);
  RemoveUnlessKept file(path);
  format_ext4_into(fd.get(), options);
  file.keep();
}

void format_ext4_into(int file, const FormatOptions& options) {
  check_options(options);
  const UniqueFd fd(::fcntl(file, F_DUPFD_CLOEXEC, 0));
  if (!fd) fail_step(kWhat + "holding its file", errno);
  if (options.reserve) {
    reserve(fd.get(), options.bytes);
  } else if (::ftruncate(fd.get(), static_cast<off_t>(options.bytes)) != 0) {
    fail_step(kWhat + "sizing it", errno);
  }

  Filesystem fs = initialize(fd.get(), options.bytes);
  check(ext2fs_allocate_tables(fs.get()), "placing its bitmaps and inode tables");
  mark_inode_tables_zeroed(fs.get());
  make_root(fs.get(), options);
  make_lost_and_found(fs.get());
  make_directories(fs.get(), options.directories);
  reserve_special_inodes(fs.get());
  add_journal(fs.get());
  finish(std::move(fs));
}

}  // namespace mayura::disk
