#pragma once
// A scratch directory under /tmp for one test, removed with what it holds
// when it goes.

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace mayura::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "mayura-test") {
    std::string name = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + name + ": " + std::strerror(errno));
    }
    path = name;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace mayura::testing
