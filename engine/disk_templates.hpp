#pragma once
// New disks, formatted once: for each size and owner a create asks for, the
// engine formats one sparse template in its disk directory and copies it
// into each new disk (a few data ranges, then the disk's blocks reserved),
// which costs a fraction of formatting. Templates are this engine's alone
// (named by a random id, locked while it lives) and go with it; one a dead
// engine left is removed by the next (remove_orphan_disks).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "mayura/base/unique_fd.hpp"

namespace mayura::native {

inline constexpr char kTemplateSuffix[] = ".template";

class DiskTemplates {
 public:
  explicit DiskTemplates(std::string dir);
  DiskTemplates(const DiskTemplates&) = delete;
  DiskTemplates& operator=(const DiskTemplates&) = delete;
  ~DiskTemplates();

  // The template of a disk of `bytes` whose workspace `uid` and `gid` own,
  // opened for reading (formatted the first time it is asked for). Throws
  // SandboxError as format_ext4 does.
  UniqueFd open(std::uint64_t bytes, std::uint32_t uid, std::uint32_t gid);

 private:
  std::string dir_;
  std::string id_;
  std::mutex mutex_;
  static constexpr std::size_t kKept = 8;
  // A template: its path, its file held locked (a shared lock: an engine
  // starting tells a live engine's templates by it), and when it was last
  // used (a count of uses).
  struct Made {
    std::string path;
    UniqueFd held;
    std::uint64_t used = 0;
  };
  std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, Made> made_;  // by size and owner
  std::uint64_t uses_ = 0;
};

}  // namespace mayura::native
