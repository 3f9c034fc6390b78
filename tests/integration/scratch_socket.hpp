#pragma once
// A scratch directory for a service's socket (and a daemon's config), for the
// tests of the in-process server (service_test.cpp) and of the mayurad
// binary (daemon_test.cpp).

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "harness.hpp"

namespace mayura::testing {

inline std::string scratch_dir() {
  char dir[] = "/tmp/mayura-service-XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("mkdtemp");
  ::chmod(dir, 0755);
  return dir;
}

// A scratch directory for a server's socket (and a daemon's config).
class ScratchSocketTest : public NativeTest {
 protected:
  void SetUp() override {
    NativeTest::SetUp();
    dir_ = scratch_dir();
    socket_ = dir_ + "/mayurad.sock";
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    NativeTest::TearDown();
  }
  NativeOptions& options_of_test() { return options(); }

  std::string dir_;
  std::string socket_;
};

}  // namespace mayura::testing
