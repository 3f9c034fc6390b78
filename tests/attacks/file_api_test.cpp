// The file API: the helper serving read_file/write_file/list/remove acts in
// the sandbox, as its user, so symlinks, `..` and races with a command
// that swaps directories never reach a host file.

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "attack.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using FileApiTest = AttackTest;

// Runs `fn`; true if it threw a SandboxError (anything else fails the test).
template <class Fn>
bool refused(Fn&& fn) {
  try {
    fn();
    return false;
  } catch (const SandboxError&) {
    return true;
  }
}

std::string unique_marker(const char* what) {
  return std::string("mayura-attack-") + what + "-" + std::to_string(::getpid());
}

// True if `name` exists directly in the host's root or any top-level directory.
bool on_host(const std::string& name) {
  if (fs::exists(fs::path("/") / name)) return true;
  for (const auto& e : fs::directory_iterator("/")) {
    std::error_code ec;
    if (e.is_directory(ec) && !e.is_symlink(ec) && fs::exists(e.path() / name, ec)) return true;
  }
  return fs::exists("/etc/" + name) || fs::exists("/usr/bin/" + name);
}

TEST_F(FileApiTest, PlantedSymlinksNeverReachHostFiles) {
  const std::string shadow = read_host("/etc/shadow");
  ASSERT_FALSE(shadow.empty());
  const std::string marker = unique_marker("symlink");
  auto s = create();
  sh(s, "ln -s / /workspace/root && ln -s /etc/shadow /workspace/shadow && ln -s /proc/1/root /workspace/p1 && "
        "ln -s /proc/1/root/etc/shadow /workspace/p1shadow");
  for (const char* p : {"root/etc/shadow", "shadow", "p1/etc/shadow", "p1shadow", "/workspace/root/etc/shadow"}) {
    try {
      EXPECT_NE(s.read_file(p), shadow) << p;
    } catch (const SandboxError&) {
    }
  }
  for (const std::string& p : {"root/" + marker, "root/etc/" + marker, "p1/" + marker, "p1/etc/" + marker,
                              "root/tmp/../etc/" + marker}) {
    EXPECT_TRUE(refused([&] { s.write_file(p, "evil"); })) << p;
  }
  // writing a link's name replaces the link in the workspace with a file
  // (the helper renames a new file into place); it never writes the target
  for (const char* link : {"shadow", "p1shadow"}) {
    if (!refused([&] { s.write_file(link, "evil"); })) {
      EXPECT_EQ(sh(s, std::string("test -f /workspace/") + link + " && test ! -L /workspace/" + link + " && cat /workspace/" + link), "evil") << link;
    }
  }
  EXPECT_TRUE(refused([&] { s.remove("root/etc/hostname"); }));
  EXPECT_TRUE(refused([&] { s.remove("p1/etc/hostname"); }));
  EXPECT_TRUE(refused([&] { s.list("p1"); }));
  // what the root link lists is the sandbox's root, not the host's
  std::vector<std::string> names;
  for (const auto& e : s.list("root")) names.push_back(e.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "workspace"), names.end());
  for (const char* host_only : {"home", "var", "root", "boot", "srv", "opt", "work"}) {
    EXPECT_EQ(std::find(names.begin(), names.end(), host_only), names.end()) << host_only;
  }
  // removing the link removes the link only
  try {
    s.remove("shadow");
  } catch (const SandboxError&) {
  }
  EXPECT_EQ(read_host("/etc/shadow"), shadow);
  EXPECT_FALSE(on_host(marker));
  EXPECT_TRUE(fs::exists("/etc/hostname"));
}

TEST_F(FileApiTest, DotDotAndAbsolutePathsStayInside) {
  const std::string shadow = read_host("/etc/shadow");
  const std::string host_name = read_host("/etc/hostname");
  auto s = create();
  for (const char* p : {"../../etc/shadow", "/workspace/../../etc/shadow", "../../../../../../etc/shadow"}) {
    try {
      EXPECT_NE(s.read_file(p), shadow) << p;
    } catch (const SandboxError&) {
    }
  }
  for (const char* p : {"/workspace/../../etc/hostname", "../../etc/hostname", "/etc/hostname"}) {
    try {
      const std::string got = s.read_file(p);
      EXPECT_EQ(got.rfind("mayura-", 0), 0u) << p << ": " << got;
      EXPECT_NE(got, host_name) << p;
    } catch (const SandboxError&) {
    }
  }
  const std::string marker = unique_marker("dotdot");
  EXPECT_TRUE(refused([&] { s.write_file("../../" + marker, "evil"); }));
  EXPECT_TRUE(refused([&] { s.write_file("../../etc/" + marker, "evil"); }));
  EXPECT_FALSE(on_host(marker));
  // an absolute path is the sandbox's
  s.write_file("/tmp/" + marker, "inside");
  EXPECT_EQ(s.read_file("/tmp/" + marker), "inside");
  EXPECT_FALSE(fs::exists("/tmp/" + marker));
}

// The helper is a child of the init: whatever descriptors it holds, its own
// /proc/self links (fd, cwd, root) lead nowhere outside the sandbox.
TEST_F(FileApiTest, TheHelpersOwnProcLinksLeadNowhereOutside) {
  const std::string shadow = read_host("/etc/shadow");
  const std::string marker = unique_marker("helperfd");
  auto s = create();
  std::vector<std::string> fds;
  try {
    for (const auto& e : s.list("/proc/self/fd")) fds.push_back(e.name);
  } catch (const SandboxError&) {
  }
  std::vector<std::string> bases = {"/proc/self/root", "/proc/self/cwd", "/proc/1/root", "/proc/1/cwd",
                                    "/proc/self/fd", "/proc/thread-self/root"};
  for (const auto& fd : fds) {
    if (!fd.empty() && fd[0] != '/') bases.push_back("/proc/self/fd/" + fd);
  }
  for (const auto& base : bases) {
    SCOPED_TRACE(base);
    try {
      EXPECT_NE(s.read_file(base + "/etc/shadow"), shadow);
    } catch (const SandboxError&) {
    }
    try {
      for (const auto& e : s.list(base)) {
        for (const char* host_only : {"home", "var", "root", "boot", "srv", "opt", "work", "run"}) {
          EXPECT_NE(e.name, host_only);
        }
      }
    } catch (const SandboxError&) {
    }
    try {
      s.write_file(base + "/" + marker, "evil");
    } catch (const SandboxError&) {
    }
    try {
      s.write_file(base + "/tmp/" + marker, "evil");
    } catch (const SandboxError&) {
    }
  }
  EXPECT_FALSE(on_host(marker));
  for (const char* dir : {"/run", "/var/tmp", "/tmp"}) {
    EXPECT_FALSE(fs::exists(std::string(dir) + "/" + marker)) << dir;
  }
  // the helper's environment and command line hold nothing of the engine's
  for (const char* f : {"/proc/self/environ", "/proc/1/environ"}) {
    try {
      const std::string env = s.read_file(f);
      EXPECT_EQ(env.find("MAYURA"), std::string::npos) << f << ": " << env;
    } catch (const SandboxError&) {
    }
  }
}

TEST_F(FileApiTest, FifosAndDevicesDoNotHang) {
  auto s = create();
  sh(s, "mkfifo /workspace/fifo");
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  std::stop_source stop;
  std::thread watchdog([&, token = stop.get_token()] {
    for (int i = 0; i < 100 && !token.stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  });
  ReadOptions ro;
  ro.cancellation = stop.get_token();
  EXPECT_TRUE(refused([&] { s.read_file("/workspace/fifo", ro); }));
  FileOptions fo;
  fo.cancellation = stop.get_token();
  EXPECT_TRUE(refused([&] { s.write_file("/workspace/fifo", "x", fo); }));
  ro.max_bytes = 1u << 20;
  try {
    EXPECT_LE(s.read_file("/dev/zero", ro).size(), 1u << 20);
  } catch (const SandboxError&) {
  }
  try {
    EXPECT_LE(s.read_file("/dev/urandom", ro).size(), 1u << 20);
  } catch (const SandboxError&) {
  }
  stop.request_stop();
  watchdog.join();
  EXPECT_LT(clock::now() - start, std::chrono::seconds(8));
  EXPECT_EQ(sh(s, "echo ok"), "ok\n");
}

TEST_F(FileApiTest, ARaceSwappingADirectoryWithARootLinkReachesNothingOutside) {
  const std::string marker = unique_marker("race");
  auto s = create();
  install_probe(s);
  ExecOptions eo;
  eo.timeout_ms = 15000;
  auto swapping = std::async(std::launch::async, [&] {
    return s.exec({"/workspace/probe", "swap", "/workspace/d", "/workspace/l", "/", "6000"}, eo);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int wrote = 0, write_refused = 0, read_ok = 0, read_refused = 0;
  for (int i = 0; i < 200; ++i) {
    for (const char* dir : {"d/", "l/", "l/etc/", "l/tmp/"}) {
      const std::string path = std::string(dir) + marker;
      try {
        s.write_file(path, marker);
        ++wrote;
      } catch (const SandboxError&) {
        ++write_refused;
      }
      try {
        EXPECT_EQ(s.read_file(path), marker) << path;  // only ever what was written inside
        ++read_ok;
      } catch (const SandboxError&) {
        ++read_refused;
      }
    }
  }
  const ExecResult r = swapping.get();
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
  EXPECT_NE(parse_results(r.stdout)["swaps"], "0");
  EXPECT_FALSE(on_host(marker));
  // every call returned (none crashed or hung)
  EXPECT_EQ(wrote + write_refused, 800);
  EXPECT_EQ(read_ok + read_refused, 800);
  RecordProperty("wrote", wrote);
  RecordProperty("write_refused", write_refused);
  RecordProperty("read_ok", read_ok);
  EXPECT_EQ(sh(s, "echo alive"), "alive\n");
}

}  // namespace
}  // namespace mayura::testing
