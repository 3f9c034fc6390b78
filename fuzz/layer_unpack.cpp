// A layer's tar (what an image archive or a registry hands us), unpacked
// into a fresh directory, as the image store does. Properties: a bad layer
// is ImageError; nothing is written outside the directory (a sentinel
// beside it stays as it was, and nothing else appears there); inside, no
// device but the 0/0 whiteout and no setuid or setgid bit is left.

#include <archive.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "fuzz.hpp"
#include "layer_unpack.hpp"
#include "mayura/rootfs/image_error.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSentinel = "left alone";

// One scratch directory per process, removed at exit.
struct Scratch {
  fs::path base;
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/mayura-fuzz-layer-XXXXXX";
    FUZZ_CHECK(::mkdtemp(templ.data()) != nullptr);
    base = templ;
    std::ofstream(base / "sentinel") << kSentinel;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
};

// Lets the owner into every directory (a layer may make them 0000), then
// removes the tree; symlinks are removed, never followed.
void remove_tree(const fs::path& root) {
  std::error_code ec;
  fs::permissions(root, fs::perms::owner_all, fs::perm_options::add, ec);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(root, ec);
  FUZZ_CHECK(!fs::exists(fs::symlink_status(root)));
}

void check_inside(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st {};
    FUZZ_CHECK(::lstat(it->path().c_str(), &st) == 0);
    FUZZ_CHECK((st.st_mode & (S_ISUID | S_ISGID)) == 0 || S_ISDIR(st.st_mode));
    if (S_ISCHR(st.st_mode)) FUZZ_CHECK(major(st.st_rdev) == 0 && minor(st.st_rdev) == 0);
    FUZZ_CHECK(!S_ISBLK(st.st_mode) && !S_ISSOCK(st.st_mode));
  }
}

void check_outside(const fs::path& base) {
  std::size_t names = 0;
  for (const auto& e : fs::directory_iterator(base)) {
    FUZZ_CHECK(e.path().filename() == "root" || e.path().filename() == "sentinel");
    ++names;
  }
  FUZZ_CHECK(names == 2);
  FUZZ_CHECK(fs::is_regular_file(fs::symlink_status(base / "sentinel")));
  std::ifstream in(base / "sentinel");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FUZZ_CHECK(text == kSentinel);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Scratch scratch;
  const fs::path root = scratch.base / "root";
  FUZZ_CHECK(::mkdir(root.c_str(), 0755) == 0);
  {
    const int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FUZZ_CHECK(dir >= 0);
    std::unique_ptr<archive, decltype(&archive_read_free)> tar(archive_read_new(), archive_read_free);
    archive_read_support_filter_gzip(tar.get());
    archive_read_support_format_tar(tar.get());
    if (archive_read_open_memory(tar.get(), data, size) == ARCHIVE_OK) {
      mayura::rootfs::UnpackLimits limits;
      limits.max_bytes = 8u << 20;
      limits.max_entries = 4096;
      try {
        (void)mayura::rootfs::unpack_layer(tar.get(), dir, limits);
        // Unpacked whole (as root: a layer's owners are set, and only root
        // may give a file to uid 0; ctest runs as root, scripts/test.sh).
        mayura::fuzz::accept();
      } catch (const mayura::rootfs::ImageError&) {
      }
    }
    ::close(dir);
  }
  check_outside(scratch.base);
  check_inside(root);
  remove_tree(root);
  return 0;
}
