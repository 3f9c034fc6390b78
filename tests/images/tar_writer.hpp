#pragma once
// libarchive's writer behind a small RAII class, for the layer tars and the
// archives around them. Internal to mayura_test_images.

#include <archive.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "image_archives.hpp"

namespace mayura::testing::images::detail {

// Throws std::runtime_error saying what failed and why, when libarchive
// returned anything short of success (a warning here means lost data).
void check(archive* a, int rc, std::string_view what);

// Puts the compression filter on a writer; gzip without a timestamp, so the
// same bytes give the same blob.
void add_filter(archive* a, Compression compression);

class TarWriter {
 public:
  // A pax tar appended to `out`.
  TarWriter(std::string& out, Compression compression);
  // A pax tar in a new file at `path`.
  TarWriter(const std::filesystem::path& path, Compression compression);
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  ~TarWriter();

  // Writes the entry with its contents. Throws on a declared_size: that
  // member cannot be written through libarchive (it would pad to the size).
  void add(const Entry& entry);
  // The members of the outer archives, without copying large blobs into an
  // Entry.
  void add_file(const std::string& path, std::string_view contents, unsigned mode = 0644);
  void add_dir(const std::string& path);
  void add_symlink(const std::string& path, const std::string& target);
  // Ends the archive (the end-of-archive blocks, the compression trailer);
  // the output is complete only after this.
  void finish();

 private:
  TarWriter(Compression compression);
  void write(const Entry& entry, std::string_view contents);

  struct Free {
    void operator()(archive* a) const { archive_write_free(a); }
  };
  std::unique_ptr<archive, Free> a_;
  bool finished_ = false;
};

}  // namespace mayura::testing::images::detail
