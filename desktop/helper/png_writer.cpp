#include "png_writer.hpp"

#include <png.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstring>
#include <string>

#include "display.hpp"

namespace mayura::desktop {
namespace {

struct Sink {
  int fd;
  int error;  // errno of a write that failed, or 0
};

void write_bytes(png_structp png, png_bytep data, png_size_t size) {
  auto* sink = static_cast<Sink*>(png_get_io_ptr(png));
  while (size > 0) {
    const ssize_t n = ::write(sink->fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sink->error = n < 0 ? errno : EIO;
      png_error(png, "write failed");
    }
    data += n;
    size -= static_cast<png_size_t>(n);
  }
}

void flush_nothing(png_structp) {}

// Quiet: the helper's one message on failure is its own.
void on_error(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void on_warning(png_structp, png_const_charp) {}

// libpng reports an error by longjmp to here: this frame holds nothing that
// needs a destructor, which a longjmp would skip. What `row` throws unwinds
// through it as usual.
bool encode(png_structp png, png_infop info, int width, int height,
            const std::function<const unsigned char*(int)>& row) {
  // NOLINTNEXTLINE(cert-err52-cpp): libpng reports an error only by longjmp
  if (setjmp(png_jmpbuf(png)) != 0) return false;
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // Level 1 with the Sub filter: a screen of flat colours and text packs
  // nearly as small as at the default level, in a fraction of the time.
  png_set_compression_level(png, 1);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) png_write_row(png, row(y));
  png_write_end(png, info);
  return true;
}

class PngWrite {
 public:
  PngWrite() {
    png_ = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, on_error, on_warning);
    if (png_ != nullptr) info_ = png_create_info_struct(png_);
    if (info_ == nullptr) throw Failure{kFailed, "libpng could not start (out of memory)"};
  }
  ~PngWrite() { png_destroy_write_struct(&png_, &info_); }
  PngWrite(const PngWrite&) = delete;
  PngWrite& operator=(const PngWrite&) = delete;
  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

}  // namespace

void write_png(int fd, int width, int height, const std::function<const unsigned char*(int)>& row) {
  const PngWrite write;
  Sink sink{fd, 0};
  png_set_write_fn(write.png(), &sink, write_bytes, flush_nothing);
  if (!encode(write.png(), write.info(), width, height, row)) {
    throw Failure{kFailed, sink.error != 0 ? "writing the screenshot: " + std::string(std::strerror(sink.error))
                                           : std::string("libpng failed to encode the screenshot")};
  }
}

}  // namespace mayura::desktop
