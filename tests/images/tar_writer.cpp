#include "tar_writer.hpp"

#include <archive_entry.h>
#include <sys/stat.h>

#include <stdexcept>

namespace mayura::testing::images::detail {
namespace {

la_ssize_t append(archive*, void* out, const void* buffer, size_t length) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

struct EntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

mode_t file_type(EntryType type) {
  switch (type) {
    case EntryType::file:
    case EntryType::hardlink:  // a hardlink is a regular file whose header names its first path
      return AE_IFREG;
    case EntryType::dir: return AE_IFDIR;
    case EntryType::symlink: return AE_IFLNK;
    case EntryType::char_device: return AE_IFCHR;
    case EntryType::block_device: return AE_IFBLK;
    case EntryType::fifo: return AE_IFIFO;
  }
  throw std::logic_error("image fixture: unknown entry type");
}

}  // namespace

void check(archive* a, int rc, std::string_view what) {
  if (rc == ARCHIVE_OK) return;
  const char* why = archive_error_string(a);
  throw std::runtime_error("image fixture: " + std::string(what) + ": " + (why ? why : "libarchive failed"));
}

void add_filter(archive* a, Compression compression) {
  switch (compression) {
    case Compression::none: return;
    case Compression::gzip:
      check(a, archive_write_add_filter_gzip(a), "gzip filter");
      // "!timestamp": no mtime in the gzip header, so blobs are reproducible.
      check(a, archive_write_set_filter_option(a, "gzip", "timestamp", nullptr), "gzip without a timestamp");
      return;
    case Compression::zstd: check(a, archive_write_add_filter_zstd(a), "zstd filter"); return;
  }
}

TarWriter::TarWriter(Compression compression) : a_(archive_write_new()) {
  if (!a_) throw std::runtime_error("image fixture: archive_write_new failed");
  // Restricted pax: plain ustar headers unless a field does not fit, which
  // is what importers meet from Go's archive/tar.
  check(a_.get(), archive_write_set_format_pax_restricted(a_.get()), "pax format");
  add_filter(a_.get(), compression);
  // No padding to a 10 KiB record after the end-of-archive blocks (or after
  // a compressed stream, where zstd would take it for a broken frame).
  check(a_.get(), archive_write_set_bytes_in_last_block(a_.get(), 1), "block size");
}

TarWriter::TarWriter(std::string& out, Compression compression) : TarWriter(compression) {
  check(a_.get(), archive_write_open2(a_.get(), &out, nullptr, append, nullptr, nullptr), "open in memory");
}

TarWriter::TarWriter(const std::filesystem::path& path, Compression compression) : TarWriter(compression) {
  check(a_.get(), archive_write_open_filename(a_.get(), path.c_str()), "open " + path.string());
}

TarWriter::~TarWriter() {
  // An unfinished writer is dropped without its trailer: the caller is
  // already throwing.
  if (!finished_) archive_write_fail(a_.get());
}

void TarWriter::add(const Entry& entry) {
  if (entry.declared_size) throw std::logic_error("image fixture: declared_size needs the raw writer");
  write(entry, entry.type == EntryType::file ? std::string_view(entry.contents) : std::string_view());
}

void TarWriter::add_file(const std::string& path, std::string_view contents, unsigned mode) {
  Entry e;
  e.path = path;
  e.mode = mode;
  write(e, contents);
}

void TarWriter::add_dir(const std::string& path) { write(dir(path), {}); }

void TarWriter::add_symlink(const std::string& path, const std::string& target) {
  write(images::symlink(path, target), {});
}

void TarWriter::write(const Entry& entry, std::string_view contents) {
  std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
  archive_entry_set_pathname(e.get(), entry.path.c_str());
  archive_entry_set_filetype(e.get(), file_type(entry.type));
  archive_entry_set_perm(e.get(), entry.mode & 07777);
  archive_entry_set_uid(e.get(), entry.uid);
  archive_entry_set_gid(e.get(), entry.gid);
  archive_entry_set_mtime(e.get(), entry.mtime, 0);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(contents.size()));
  switch (entry.type) {
    case EntryType::symlink: archive_entry_set_symlink(e.get(), entry.link_target.c_str()); break;
    case EntryType::hardlink: archive_entry_set_hardlink(e.get(), entry.link_target.c_str()); break;
    case EntryType::char_device:
    case EntryType::block_device:
      archive_entry_set_rdevmajor(e.get(), entry.dev_major);
      archive_entry_set_rdevminor(e.get(), entry.dev_minor);
      break;
    default: break;
  }
  check(a_.get(), archive_write_header(a_.get(), e.get()), "header of " + entry.path);
  while (!contents.empty()) {
    const la_ssize_t n = archive_write_data(a_.get(), contents.data(), contents.size());
    if (n <= 0) check(a_.get(), ARCHIVE_FATAL, "data of " + entry.path);
    contents.remove_prefix(static_cast<std::size_t>(n));
  }
  check(a_.get(), archive_write_finish_entry(a_.get()), "end of " + entry.path);
}

void TarWriter::finish() {
  finished_ = true;
  check(a_.get(), archive_write_close(a_.get()), "close");
}

}  // namespace mayura::testing::images::detail
