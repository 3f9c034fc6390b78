// Layer entries, layer tars, compression and digests.

#include <archive_entry.h>
#include <openssl/evp.h>

#include <array>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "image_archives.hpp"
#include "tar_writer.hpp"

namespace mayura::testing::images {
namespace {

constexpr std::size_t kBlock = 512;

Entry make(std::string path, EntryType type, unsigned mode) {
  Entry e;
  e.path = std::move(path);
  e.type = type;
  e.mode = mode;
  return e;
}

std::string join(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  return path;
}

// `value` in octal, zero-padded to fill `field` but for its final NUL.
void octal(char* field, std::size_t width, std::uint64_t value) {
  for (std::size_t i = width - 1; i-- > 0; value >>= 3) field[i] = static_cast<char>('0' + (value & 7));
  field[width - 1] = '\0';
  if (value != 0) throw std::logic_error("image fixture: value too large for a tar field");
}

// A size that octal cannot hold (over 8 GiB) goes in base-256, the GNU
// extension every importer's tar reader (Go, libarchive, GNU tar) accepts.
void size_field(char* field, std::uint64_t size) {
  constexpr std::size_t kWidth = 12;
  if (size < (std::uint64_t{1} << 33)) return octal(field, kWidth, size);
  for (std::size_t i = kWidth; i-- > 1; size >>= 8) field[i] = static_cast<char>(size & 0xff);
  field[0] = static_cast<char>(0x80);
}

// The ustar header libarchive will not write: one whose size is larger than
// the data that follows it.
std::string raw_header(const Entry& e) {
  if (e.type != EntryType::file) throw std::logic_error("image fixture: declared_size is for files only");
  if (e.path.size() >= 100) throw std::logic_error("image fixture: declared_size needs a path under 100 bytes");
  std::array<char, kBlock> h{};
  std::memcpy(h.data(), e.path.data(), e.path.size());
  octal(&h[100], 8, e.mode & 07777);
  octal(&h[108], 8, e.uid);
  octal(&h[116], 8, e.gid);
  size_field(&h[124], *e.declared_size);
  octal(&h[136], 12, static_cast<std::uint64_t>(e.mtime));
  std::memset(&h[148], ' ', 8);  // the checksum counts its own field as spaces
  h[156] = '0';
  std::memcpy(&h[257], "ustar", 6);
  std::memcpy(&h[263], "00", 2);
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  octal(&h[148], 7, sum);  // six digits, NUL, and the space already there
  return std::string(h.data(), h.size());
}

std::string tar_of(const std::vector<Entry>& entries) {
  std::string out;
  std::size_t raw = entries.size();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].declared_size) continue;
    if (i + 1 != entries.size()) throw std::logic_error("image fixture: declared_size only on a layer's last entry");
    raw = i;
  }
  detail::TarWriter w(out, Compression::none);
  for (std::size_t i = 0; i < raw; ++i) w.add(entries[i]);
  w.finish();
  if (raw == entries.size()) return out;
  // The member claiming more than it has goes where the end-of-archive
  // blocks were, and the stream stops in its data, as a cut download would.
  if (out.size() < 2 * kBlock || out.find_first_not_of('\0', out.size() - 2 * kBlock) != std::string::npos) {
    throw std::logic_error("image fixture: libarchive's tar did not end in two zero blocks");
  }
  out.resize(out.size() - 2 * kBlock);
  out += raw_header(entries[raw]);
  out += entries[raw].contents;
  return out;
}

}  // namespace

Entry file(std::string path, std::string contents, unsigned mode, unsigned uid, unsigned gid) {
  Entry e = make(std::move(path), EntryType::file, mode);
  e.contents = std::move(contents);
  e.uid = uid;
  e.gid = gid;
  return e;
}

Entry dir(std::string path, unsigned mode, unsigned uid, unsigned gid) {
  Entry e = make(std::move(path), EntryType::dir, mode);
  e.uid = uid;
  e.gid = gid;
  return e;
}

Entry symlink(std::string path, std::string target) {
  Entry e = make(std::move(path), EntryType::symlink, 0777);
  e.link_target = std::move(target);
  return e;
}

Entry hardlink(std::string path, std::string target) {
  Entry e = make(std::move(path), EntryType::hardlink, 0644);
  e.link_target = std::move(target);
  return e;
}

Entry whiteout(std::string_view dir, std::string_view name) {
  return file(join(dir, ".wh." + std::string(name)), "", 0644);
}

Entry opaque(std::string_view dir) { return file(join(dir, ".wh..wh..opq"), "", 0644); }

Entry char_device(std::string path, unsigned major, unsigned minor, unsigned mode) {
  Entry e = make(std::move(path), EntryType::char_device, mode);
  e.dev_major = major;
  e.dev_minor = minor;
  return e;
}

Entry block_device(std::string path, unsigned major, unsigned minor, unsigned mode) {
  Entry e = make(std::move(path), EntryType::block_device, mode);
  e.dev_major = major;
  e.dev_minor = minor;
  return e;
}

Entry fifo(std::string path, unsigned mode) { return make(std::move(path), EntryType::fifo, mode); }

std::string layer_tar(const std::vector<Entry>& entries, Compression compression) {
  std::string tar = tar_of(entries);
  return compression == Compression::none ? tar : compress(tar, compression);
}

std::string compress(std::string_view bytes, Compression compression) {
  if (compression == Compression::none) return std::string(bytes);
  struct Free {
    void operator()(archive* a) const { archive_write_free(a); }
  };
  std::unique_ptr<archive, Free> a(archive_write_new());
  std::string out;
  // The raw format passes one member's data through the filters unframed.
  detail::check(a.get(), archive_write_set_format_raw(a.get()), "raw format");
  detail::add_filter(a.get(), compression);
  detail::check(a.get(), archive_write_set_bytes_in_last_block(a.get(), 1), "block size");
  detail::check(a.get(),
                archive_write_open2(
                    a.get(), &out, nullptr,
                    [](archive*, void* o, const void* b, size_t n) -> la_ssize_t {
                      static_cast<std::string*>(o)->append(static_cast<const char*>(b), n);
                      return static_cast<la_ssize_t>(n);
                    },
                    nullptr, nullptr),
                "open in memory");
  std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(), archive_entry_free);
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
  detail::check(a.get(), archive_write_header(a.get(), e.get()), "raw header");
  while (!bytes.empty()) {
    const la_ssize_t n = archive_write_data(a.get(), bytes.data(), bytes.size());
    if (n <= 0) detail::check(a.get(), ARCHIVE_FATAL, "compress");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  detail::check(a.get(), archive_write_close(a.get()), "compress");
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("image fixture: EVP_Digest failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned i = 0; i < length; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

std::string sha256_digest(std::string_view bytes) { return "sha256:" + sha256_hex(bytes); }

}  // namespace mayura::testing::images
