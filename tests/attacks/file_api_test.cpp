// The file API: the helper serving read_file/write_file/list/remove acts in
// the sandbox, as its user, so symlinks, `..` and races with a command
// that swaps directories never reach a host file.

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "tests/support/output_event.hpp"
#include "attack.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using FileApiTest = AttackTest;

// What a call did: "ok" ("ok:" and the text, for a call that gives text),
// or the name of the reason it was refused for, so that a test pins the one
// outcome it expects and an unexpected refusal (INTERNAL, say) fails it.
template <class Fn>
std::string outcome(Fn&& fn) {
  try {
    if constexpr (std::is_same_v<decltype(fn()), std::string>) {
      return "ok:" + fn();
    } else {
      fn();
      return "ok";
    }
  } catch (const SandboxError& e) {
    return std::string(reason_name(e.reason()));
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
  sh(s,
     "ln -s / /workspace/root && ln -s /etc/shadow /workspace/shadow && ln -s /proc/1/root /workspace/p1 && "
     "ln -s /proc/1/root/etc/shadow /workspace/p1shadow");
  // the sandbox's own shadow (masked: empty), or a link into the init the
  // helper may not follow
  for (const char* p : {"root/etc/shadow", "shadow", "/workspace/root/etc/shadow"}) {
    EXPECT_EQ(outcome([&] { return s.read_file(p); }), "ok:") << p;
  }
  for (const char* p : {"p1/etc/shadow", "p1shadow"}) {
    EXPECT_EQ(outcome([&] { return s.read_file(p); }), "PERMISSION_DENIED") << p;
  }
  for (const std::string& p :
       {"root/" + marker, "root/etc/" + marker, "p1/" + marker, "p1/etc/" + marker, "root/tmp/../etc/" + marker}) {
    EXPECT_EQ(outcome([&] { s.write_file(p, "evil"); }), "PERMISSION_DENIED") << p;
  }
  // writing a link's name replaces the link in the workspace with a file
  // (the helper renames a new file into place); it never writes the target
  for (const char* link : {"shadow", "p1shadow"}) {
    EXPECT_EQ(outcome([&] { s.write_file(link, "evil"); }), "ok") << link;
    EXPECT_EQ(sh(s, std::string("test -f /workspace/") + link + " && test ! -L /workspace/" + link +
                        " && cat /workspace/" + link),
              "evil")
        << link;
  }
  EXPECT_EQ(outcome([&] { s.remove("root/etc/hostname"); }), "PERMISSION_DENIED");
  EXPECT_EQ(outcome([&] { s.remove("p1/etc/hostname"); }), "PERMISSION_DENIED");
  EXPECT_EQ(outcome([&] { s.list("p1"); }), "PERMISSION_DENIED");
  // what the root link lists is the sandbox's root, not the host's
  std::vector<std::string> names;
  for (const auto& e : s.list("root")) names.push_back(e.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "workspace"), names.end());
  for (const char* host_only : {"home", "var", "root", "boot", "srv", "opt", "work"}) {
    EXPECT_EQ(std::find(names.begin(), names.end(), host_only), names.end()) << host_only;
  }
  // removing the link removes the link only
  EXPECT_EQ(outcome([&] { s.remove("shadow"); }), "ok");
  EXPECT_EQ(sh(s, "test ! -e /workspace/shadow && test ! -L /workspace/shadow && echo gone"), "gone\n");
  EXPECT_EQ(read_host("/etc/shadow"), shadow);
  EXPECT_FALSE(on_host(marker));
  EXPECT_TRUE(fs::exists("/etc/hostname"));
}

TEST_F(FileApiTest, DotDotAndAbsolutePathsStayInside) {
  const std::string shadow = read_host("/etc/shadow");
  const std::string host_name = read_host("/etc/hostname");
  auto s = create();
  // `..` stops at the sandbox's root: the sandbox's own shadow (masked:
  // empty, where the host's is not)
  ASSERT_FALSE(shadow.empty());
  for (const char* p : {"../../etc/shadow", "/workspace/../../etc/shadow", "../../../../../../etc/shadow"}) {
    EXPECT_EQ(outcome([&] { return s.read_file(p); }), "ok:") << p;
  }
  const std::string own_name = sh(s, "cat /etc/hostname");
  ASSERT_EQ(own_name.rfind("mayura-", 0), 0u) << own_name;
  ASSERT_NE(own_name, host_name);
  for (const char* p : {"/workspace/../../etc/hostname", "../../etc/hostname", "/etc/hostname"}) {
    EXPECT_EQ(outcome([&] { return s.read_file(p); }), "ok:" + own_name) << p;
  }
  const std::string marker = unique_marker("dotdot");
  EXPECT_EQ(outcome([&] { s.write_file("../../" + marker, "evil"); }), "PERMISSION_DENIED");
  EXPECT_EQ(outcome([&] { s.write_file("../../etc/" + marker, "evil"); }), "PERMISSION_DENIED");
  EXPECT_FALSE(on_host(marker));
  // an absolute path is the sandbox's
  s.write_file("/tmp/" + marker, "inside");
  EXPECT_EQ(s.read_file("/tmp/" + marker), "inside");
  EXPECT_FALSE(fs::exists("/tmp/" + marker));
  EXPECT_EQ(read_host("/etc/shadow"), shadow);
}

// The helper is a child of the init: whatever descriptors it holds, its own
// /proc/self links (fd, cwd, root) lead nowhere outside the sandbox.
TEST_F(FileApiTest, TheHelpersOwnProcLinksLeadNowhereOutside) {
  const std::string shadow = read_host("/etc/shadow");
  const std::string marker = unique_marker("helperfd");
  auto s = create();
  // the helper's own descriptors: the listing must work, or none is tried
  std::vector<std::string> fds;
  EXPECT_EQ(outcome([&] {
              for (const auto& e : s.list("/proc/self/fd")) fds.push_back(e.name);
            }),
            "ok");
  EXPECT_FALSE(fds.empty());
  const std::vector<std::string> fixed = {"/proc/self/root", "/proc/self/cwd", "/proc/1/root",
                                          "/proc/1/cwd",     "/proc/self/fd",  "/proc/thread-self/root"};
  std::vector<std::string> bases = fixed;
  for (const auto& fd : fds) {
    if (!fd.empty() && fd[0] != '/') bases.push_back("/proc/self/fd/" + fd);
  }
  // what each call through each link did, one line a link
  std::string did;
  std::vector<std::string> through_fds;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    const std::string& base = bases[i];
    SCOPED_TRACE(base);
    std::string read = outcome([&] { return s.read_file(base + "/etc/shadow"); });
    EXPECT_NE(read, "ok:" + shadow);
    if (read.rfind("ok:", 0) == 0) read = "ok:" + std::to_string(read.size() - 3) + "B";
    std::vector<std::string> names;
    const std::string listed = outcome([&] {
      for (const auto& e : s.list(base)) names.push_back(e.name);
    });
    for (const char* host_only : {"home", "var", "root", "boot", "srv", "opt", "work", "run"}) {
      EXPECT_EQ(std::find(names.begin(), names.end(), host_only), names.end()) << host_only;
    }
    const std::string wrote = outcome([&] { s.write_file(base + "/" + marker, "evil"); });
    const std::string wrote_tmp = outcome([&] { s.write_file(base + "/tmp/" + marker, "evil"); });
    const std::string line = "read=" + read + " list=" + listed + " write=" + wrote + " tmp=" + wrote_tmp;
    if (i < fixed.size()) {
      did += base + " " + line + "\n";
    } else {
      through_fds.push_back(base + " " + line);
    }
  }
  // its root is the sandbox's (the masked, empty shadow; / not the sandbox
  // user's to write, /tmp is), its cwd the workspace, the init's links closed
  EXPECT_EQ(did,
            "/proc/self/root read=ok:0B list=ok write=PERMISSION_DENIED tmp=ok\n"
            "/proc/self/cwd read=NOT_FOUND list=ok write=ok tmp=ok\n"
            "/proc/1/root read=PERMISSION_DENIED list=PERMISSION_DENIED write=PERMISSION_DENIED tmp=PERMISSION_DENIED\n"
            "/proc/1/cwd read=PERMISSION_DENIED list=PERMISSION_DENIED write=PERMISSION_DENIED tmp=PERMISSION_DENIED\n"
            "/proc/self/fd read=NOT_FOUND list=ok write=NOT_FOUND tmp=NOT_FOUND\n"
            "/proc/thread-self/root read=ok:0B list=ok write=PERMISSION_DENIED tmp=ok\n");
  // no descriptor of the helper is a directory to go through: its standard
  // streams are no directory (INVALID_INPUT), the others either no directory
  // or nothing a path can enter (NOT_FOUND); the same for every call
  ASSERT_GE(through_fds.size(), 3u);
  for (const std::string& got : through_fds) {
    const std::string fd = got.substr(0, got.find(' '));
    const std::string line = got.substr(got.find(' ') + 1);
    if (fd == "/proc/self/fd/0" || fd == "/proc/self/fd/1" || fd == "/proc/self/fd/2") {
      EXPECT_EQ(line, "read=INVALID_INPUT list=INVALID_INPUT write=INVALID_INPUT tmp=INVALID_INPUT") << fd;
    } else {
      EXPECT_TRUE(line == "read=INVALID_INPUT list=INVALID_INPUT write=INVALID_INPUT tmp=INVALID_INPUT" ||
                  line == "read=NOT_FOUND list=NOT_FOUND write=NOT_FOUND tmp=NOT_FOUND")
          << got;
    }
  }
  EXPECT_FALSE(on_host(marker));
  for (const char* dir : {"/run", "/var/tmp", "/tmp"}) {
    EXPECT_FALSE(fs::exists(std::string(dir) + "/" + marker)) << dir;
  }
  // the helper's environment and command line hold nothing of the engine's
  for (const char* f : {"/proc/self/environ", "/proc/1/environ"}) {
    // not the sandbox user's to read at all
    EXPECT_EQ(outcome([&] { return s.read_file(f); }), "PERMISSION_DENIED") << f;
  }
}

TEST_F(FileApiTest, FifosAndDevicesDoNotHang) {
  auto s = create();
  sh(s, "mkfifo /workspace/fifo");
  // A watchdog that cancels the calls if they have not all returned within
  // its bound: a call that hung would then end CANCELLED, not with the
  // reason expected of it, and the watchdog says it had to act. The bound
  // keeps a hang from hanging the suite; it measures nothing.
  std::stop_source stop;
  std::mutex m;
  std::condition_variable changed;
  bool done = false, had_to_cancel = false;
  std::thread watchdog([&] {
    std::unique_lock lock(m);
    if (!changed.wait_for(lock, std::chrono::seconds(60), [&] { return done; })) {
      had_to_cancel = true;
      stop.request_stop();
    }
  });
  ReadOptions ro;
  ro.cancellation = stop.get_token();
  FileOptions fo;
  fo.cancellation = stop.get_token();
  const std::string fifo_read = outcome([&] { return s.read_file("/workspace/fifo", ro); });
  const std::string fifo_write = outcome([&] { s.write_file("/workspace/fifo", "x", fo); });
  ro.max_bytes = 1u << 20;
  const std::string zero = outcome([&] { return s.read_file("/dev/zero", ro); });
  const std::string urandom = outcome([&] { return s.read_file("/dev/urandom", ro); });
  {
    std::lock_guard lock(m);
    done = true;
  }
  changed.notify_all();
  watchdog.join();
  EXPECT_FALSE(had_to_cancel) << "a call on a fifo or a device hung until the watchdog cancelled it";
  // none is a regular file: refused as such, at once
  EXPECT_EQ(fifo_read, "INVALID_INPUT");
  EXPECT_EQ(fifo_write, "INVALID_INPUT");
  EXPECT_EQ(zero, "INVALID_INPUT");
  EXPECT_EQ(urandom, "INVALID_INPUT");
  EXPECT_EQ(sh(s, "echo ok"), "ok\n");
}

TEST_F(FileApiTest, ARaceSwappingADirectoryWithARootLinkReachesNothingOutside) {
  const std::string marker = unique_marker("race");
  auto s = create();
  install_probe(s);
  // The swapping says when it starts and goes on until the test has made
  // every call (a stop file; 120 s only as a backstop), so all of them race
  // it.
  OutputEvent out;
  ExecOptions eo;
  eo.timeout_ms = 180000;
  eo.on_stdout = out.sink();
  auto swapping = std::async(std::launch::async, [&] {
    return s.exec({"/workspace/probe", "swap", "/workspace/d", "/workspace/l", "/", "120000", "/workspace/stop"}, eo);
  });
  ASSERT_TRUE(out.wait_for("swap=started\n")) << out.seen();
  // Each call either does what it was asked inside the sandbox or is
  // refused for a reason the race explains: never another (INTERNAL, say),
  // and a read gives only what was written.
  std::map<std::string, int> writes, reads;
  for (int i = 0; i < 200; ++i) {
    for (const char* dir : {"d/", "l/", "l/etc/", "l/tmp/"}) {
      const std::string path = std::string(dir) + marker;
      std::string wrote_how = "ok";
      try {
        s.write_file(path, marker);
      } catch (const SandboxError& e) {
        wrote_how = std::string(reason_name(e.reason()));
        // (the write takes its temporary file and its rename in one
        // directory it opened once, so a swap cannot split them: no EXDEV)
        if (e.reason() == Reason::INTERNAL) wrote_how += std::string(" (") + e.what() + ")";
      }
      ++writes[wrote_how];
      ++reads[outcome([&] { return s.read_file(path); })];
    }
  }
  EXPECT_EQ(swapping.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the swapping ended before the calls did";
  s.write_file("/workspace/stop", "");
  const ExecResult r = swapping.get();
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
  EXPECT_NE(parse_results(r.stdout)["swaps"], "0");
  EXPECT_FALSE(on_host(marker));
  int wrote = 0, write_refused = 0, read_ok = 0;
  for (const auto& [what, n] : writes) {
    (what == "ok" ? wrote : write_refused) += n;
    EXPECT_TRUE(what == "ok" || what == "NOT_FOUND" || what == "PERMISSION_DENIED") << what << " (" << n << " writes)";
  }
  for (const auto& [what, n] : reads) {
    if (what == "ok:" + marker) read_ok += n;
    EXPECT_TRUE(what == "ok:" + marker || what == "NOT_FOUND") << what << " (" << n << " reads)";
  }
  EXPECT_GT(wrote, 0);
  EXPECT_GT(read_ok, 0);
  RecordProperty("wrote", wrote);
  RecordProperty("write_refused", write_refused);
  RecordProperty("read_ok", read_ok);
  EXPECT_EQ(sh(s, "echo alive"), "alive\n");
}

}  // namespace
}  // namespace mayura::testing
