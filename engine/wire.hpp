#pragma once
// The byte format of the engine <-> init socket: little-endian integers and
// length-prefixed strings. Shared by the engine and the in-sandbox init;
// a reader never trusts a length it was sent.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::wire {

class Writer {
 public:
  void u32(std::uint32_t v) { raw(&v, sizeof v); }
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    buf_.append(s.data(), s.size());
  }
  void strings(const std::vector<std::string>& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (const auto& s : v) str(s);
  }
  const std::string& bytes() const { return buf_; }

 private:
  void raw(const void* p, std::size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string buf_;
};

// Every read reports failure through ok(); values read after a failure are zero.
class Reader {
 public:
  Reader(const char* data, std::size_t size) : p_(data), end_(data + size) {}
  std::uint32_t u32() {
    std::uint32_t v = 0;
    raw(&v, sizeof v);
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    raw(&v, sizeof v);
    return v;
  }
  std::string str() {
    const std::uint32_t n = u32();
    if (!ok_ || n > static_cast<std::size_t>(end_ - p_)) {
      ok_ = false;
      return {};
    }
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<std::string> strings() {
    const std::uint32_t n = u32();
    std::vector<std::string> v;
    // each string takes at least its 4-byte length
    if (!ok_ || n > static_cast<std::size_t>(end_ - p_) / 4) {
      ok_ = false;
      return v;
    }
    v.reserve(n);
    for (std::uint32_t i = 0; i < n && ok_; ++i) v.push_back(str());
    return v;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }

 private:
  void raw(void* out, std::size_t n) {
    if (!ok_ || static_cast<std::size_t>(end_ - p_) < n) {
      ok_ = false;
      return;
    }
    std::memcpy(out, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

}  // namespace mayura::wire
