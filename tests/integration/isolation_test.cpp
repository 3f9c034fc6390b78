// What a sandbox is: its own namespaces and ids, no capabilities, a
// read-only image, bounded writable places, a minimal /dev, its own /proc,
// no host secrets, and a network of loopback only.

#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <thread>

#include <filesystem>
#include <initializer_list>
#include <set>
#include <sstream>

#include "harness.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using IsolationTest = NativeTest;

std::string host_ns(const char* kind) { return fs::read_symlink(std::string("/proc/self/ns/") + kind).string(); }

// A write to `path` inside fails, and for a read-only file system.
void expect_read_only(const Sandbox& s, const std::string& path) {
  const ExecResult write = s.exec({"/bin/sh", "-c", "echo x > " + path});
  EXPECT_NE(write.exit_code, 0) << path;
  EXPECT_NE(write.stderr.find("Read-only file system"), std::string::npos) << path << ": " << write.stderr;
}

// Those of `paths` this host has, as `is_kind` says (a directory, a file).
template <typename Kind>
std::vector<std::string> on_this_host(std::initializer_list<const char*> paths, Kind is_kind) {
  std::vector<std::string> found;
  for (const char* path : paths) {
    if (is_kind(fs::path(path))) found.emplace_back(path);
  }
  return found;
}

// How many distinct lines `text` has.
std::size_t distinct_lines(const std::string& text) {
  std::istringstream lines(text);
  std::set<std::string> distinct;
  for (std::string line; std::getline(lines, line);) distinct.insert(line);
  return distinct.size();
}

TEST_F(IsolationTest, EveryNamespaceIsItsOwn) {
  auto s = create();
  for (const char* kind : {"user", "mnt", "pid", "net", "uts", "ipc", "cgroup"}) {
    const std::string inside = sh(s, std::string("readlink /proc/self/ns/") + kind);
    EXPECT_NE(inside, host_ns(kind) + "\n") << kind;
    EXPECT_EQ(inside.rfind(std::string(kind) + ":[", 0), 0u) << inside;
  }
  const std::string hostname = sh(s, "hostname");
  EXPECT_EQ(hostname.rfind("mayura-", 0), 0u) << hostname;
  // the cgroup namespace is rooted at the sandbox: no host path shows
  const std::string cgroup = sh(s, "grep '^0::' /proc/self/cgroup");
  EXPECT_EQ(cgroup.rfind("0::/commands/cmd-", 0), 0u) << cgroup;
  EXPECT_EQ(cgroup.find("mayura"), std::string::npos) << cgroup;
}

TEST_F(IsolationTest, CommandsRunAsTheSandboxUserMappedToAnUnprivilegedRangeOfTheirOwn) {
  auto a = create();
  auto b = create();
  EXPECT_EQ(sh(a, "id -u; id -g; id -G"), "1000\n1000\n1000\n");
  std::istringstream map(sh(a, "cat /proc/self/uid_map"));
  std::uint64_t inside = 1, outside = 0, count = 0;
  map >> inside >> outside >> count;
  EXPECT_EQ(inside, 0u);
  EXPECT_GE(outside, 65536u);
  EXPECT_EQ(count, 65536u);
  // From the host: a long-running command's real uid is in this sandbox's range only.
  sh(a, "setsid sleep 30 >/dev/null 2>&1 </dev/null &");
  sh(b, "setsid sleep 30 >/dev/null 2>&1 </dev/null &");
  std::set<std::uint64_t> uids;
  for (pid_t pid : processes_in_range(options())) {
    std::istringstream status(read_host("/proc/" + std::to_string(pid) + "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Uid:", 0) == 0) {
        std::uint64_t uid = std::stoull(line.substr(4));
        EXPECT_NE(uid, 0u);
        EXPECT_GE(uid, 65536u);
        uids.insert(uid);
      }
    }
  }
  // two inits (inside root) and two sleeps (inside 1000), all different host ids
  EXPECT_EQ(uids.size(), 4u);
}

TEST_F(IsolationTest, NoCapabilityInAnySetAndNoNewPrivileges) {
  auto s = create();
  const std::string status = sh(s, "grep -E '^(Cap|NoNewPrivs)' /proc/self/status");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_NE(status.find(std::string(set) + ":\t0000000000000000"), std::string::npos) << status;
  }
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  // root-only acts fail
  auto r = s.exec({"/bin/sh", "-c", "hostname evil"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(sh(s, "hostname").rfind("mayura-", 0), 0u);
}

TEST_F(IsolationTest, TheImageIsReadOnly) {
  auto s = create();
  for (const char* path : {"/usr/mayura-x", "/etc/passwd", "/mayura-x", "/bin/mayura-x"}) expect_read_only(s, path);
  EXPECT_FALSE(fs::exists("/usr/mayura-x"));
}

TEST_F(IsolationTest, WorkdirAndTmpAreBoundedTmpfs) {
  options().workdir_mib = 4;
  options().tmp_mib = 4;
  auto s = create();
  EXPECT_EQ(sh(s, "pwd"), "/workspace\n");
  EXPECT_EQ(sh(s, "stat -f -c %T /workspace /tmp /dev/shm"), "tmpfs\ntmpfs\ntmpfs\n");
  EXPECT_EQ(sh(s, "stat -c '%u %a' /workspace; stat -c %a /tmp"), "1000 755\n1777\n");
  for (const char* dir : {"/workspace", "/tmp"}) {
    auto r = s.exec({"/bin/sh", "-c", std::string("dd if=/dev/zero of=") + dir + "/big bs=1M count=8"});
    EXPECT_NE(r.exit_code, 0) << dir;
    EXPECT_NE(r.stderr.find("No space left on device"), std::string::npos) << r.stderr;
  }
  // writable places are nosuid and nodev
  const std::string mounts = sh(s, "grep -E ' /(workspace|tmp|dev/shm) ' /proc/self/mountinfo");
  std::istringstream lines(mounts);
  std::string line;
  int seen = 0;
  while (std::getline(lines, line)) {
    ++seen;
    EXPECT_NE(line.find("nosuid"), std::string::npos) << line;
    EXPECT_NE(line.find("nodev"), std::string::npos) << line;
  }
  EXPECT_EQ(seen, 3);
}

TEST_F(IsolationTest, DevIsMinimal) {
  auto s = create();
  EXPECT_EQ(sh(s, "ls -A /dev | sort | tr '\\n' ' '"),
            "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ");
  EXPECT_EQ(sh(s, "echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 8 /dev/urandom | wc -c"), "4\n8\n");
  EXPECT_NE(s.exec({"/bin/sh", "-c", "echo x > /dev/full"}).exit_code, 0);
  // a private devpts: a new pty can be opened
  EXPECT_EQ(sh(s, "ls /dev/pts | grep -c ptmx"), "1\n");
  // /dev is a directory of the read-only root, no file system of its own
  const std::string devices = sh(s, "stat -c %d / /dev");
  EXPECT_EQ(devices.substr(0, devices.find('\n') + 1), devices.substr(devices.find('\n') + 1)) << devices;
  const ExecResult made = s.exec({"/bin/sh", "-c", "mkdir /dev/x"});
  EXPECT_NE(made.exit_code, 0);
}

TEST_F(IsolationTest, ProcIsTheSandboxsOwn) {
  auto s = create();
  EXPECT_EQ(sh(s, "cat /proc/1/comm"), "mayura-init\n");
  // only the sandbox's processes: the init, the shell and its ls (no pipeline: its count would be 0 were ls to
  // fail; and the init and the shell must be seen, or a look that sees nothing would pass)
  std::istringstream listing(sh(s, "echo $$; ls /proc"));
  std::string shell;
  std::getline(listing, shell);
  std::set<std::string> pids;
  for (std::string entry; std::getline(listing, entry);) {
    if (!entry.empty() && entry.find_first_not_of("0123456789") == std::string::npos) pids.insert(entry);
  }
  EXPECT_TRUE(pids.contains("1")) << ::testing::PrintToString(pids);
  EXPECT_TRUE(pids.contains(shell)) << shell << ": " << ::testing::PrintToString(pids);
  EXPECT_LE(pids.size(), 3u) << ::testing::PrintToString(pids);
  // the init is not dumpable: its exe and memory are out of reach
  EXPECT_NE(s.exec({"/bin/sh", "-c", "readlink /proc/1/exe"}).exit_code, 0);
  EXPECT_NE(s.exec({"/bin/sh", "-c", "cat /proc/1/environ"}).exit_code, 0);
  // no host /sys at all
  EXPECT_NE(s.exec({"/bin/sh", "-c", "ls /sys"}).exit_code, 0);
}

TEST_F(IsolationTest, TheHostImageHoldsNoHostSecret) {
  auto s = create();
  EXPECT_EQ(sh(s, "ls -A /"), "bin\ndev\netc\n" + std::string(fs::exists("/lib") ? "lib\n" : "") +
                                  (fs::exists("/lib32") ? "lib32\n" : "") + (fs::exists("/lib64") ? "lib64\n" : "") +
                                  (fs::exists("/libx32") ? "libx32\n" : "") + "proc\nsbin\ntmp\nusr\nworkspace\n");
  for (const char* gone : {"/root", "/home", "/var", "/run", "/sys", "/opt"}) {
    EXPECT_NE(s.exec({"/bin/sh", "-c", std::string("ls ") + gone}).exit_code, 0) << gone;
  }
  EXPECT_EQ(sh(s, "wc -c < /etc/shadow; wc -c < /etc/gshadow"), "0\n0\n");
  // the host's ssh directory is there, masked empty (sh fails the test if
  // ls does)
  ASSERT_TRUE(fs::is_directory("/etc/ssh"));
  EXPECT_EQ(sh(s, "ls -A /etc/ssh"), "");
  EXPECT_EQ(sh(s, "cut -d: -f1 /etc/passwd | tr '\\n' ' '"), "root sandbox nobody ");
  // no socket of the host anywhere: the look crosses into every mount (-xdev would skip /tmp, /workspace, /dev/shm
  // and the binds of the host's files), all but /proc, whose entries come and go under it
  // (the find must itself work: one that failed would list nothing; the
  // only directories it may not enter are ones the sandbox user cannot, where
  // no socket could be reached either)
  const auto sockets = [&] {
    const ExecResult found = s.exec({"find", "/", "-path", "/proc", "-prune", "-o", "-type", "s", "-print"});
    EXPECT_EQ(found.exit_code, found.stderr.empty() ? 0 : 1) << found.stderr;
    for (std::size_t at = 0, end; (end = found.stderr.find('\n', at)) != std::string::npos; at = end + 1) {
      const std::string line = found.stderr.substr(at, end - at);
      EXPECT_TRUE(line.ends_with(": Permission denied")) << line;
    }
    return found.stdout;
  };
  EXPECT_EQ(sockets(), "");
  // the same look finds a socket where there is one, on a mount other than the root's, and not once it is gone
  sh(s, "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"/tmp/s\")'");
  EXPECT_EQ(sockets(), "/tmp/s\n");
  sh(s, "rm /tmp/s");
  EXPECT_EQ(sockets(), "");
}

// Every directory the sandbox masks is one empty, read-only directory of the
// root's own tmpfs, bound where each is masked: no superblock of their own
// (each costs the create and the release, and kernel memory in every memory
// cgroup alive).
TEST_F(IsolationTest, TheMaskedDirectoriesShareOneEmptyReadOnlyFileSystem) {
  auto s = create();
  const std::vector<std::string> masked =
      on_this_host({"/etc/ssh", "/etc/ssl/private", "/proc/acpi", "/proc/driver", "/proc/scsi", "/proc/asound"},
                   [](const fs::path& p) { return fs::is_directory(p); });
  ASSERT_GE(masked.size(), 2u) << "this host has too few of the masked directories to compare";
  std::string devices;
  for (const auto& dir : masked) {
    EXPECT_EQ(sh(s, "ls -A " + dir), "") << dir;
    EXPECT_EQ(sh(s, "stat -f -c %T " + dir), "tmpfs\n") << dir;
    expect_read_only(s, dir + "/x");
    devices += "stat -c %d " + dir + ";";
  }
  const std::string seen = sh(s, devices + " true");
  EXPECT_EQ(distinct_lines(seen), 1u) << seen;
}

// Masked files, of /etc and of /proc alike, are one empty, read-only file of
// the root's tmpfs bound on each: no file is made and removed per mask.
TEST_F(IsolationTest, TheMaskedFilesAreOneEmptyReadOnlyFile) {
  auto s = create();
  const std::vector<std::string> masked = on_this_host({"/etc/shadow", "/etc/gshadow", "/proc/kcore", "/proc/keys",
                                                        "/proc/timer_list", "/proc/sysrq-trigger", "/proc/kallsyms"},
                                                       [](const fs::path& p) { return fs::is_regular_file(p); });
  ASSERT_GE(masked.size(), 3u) << "this host has too few of the masked files to compare";
  std::string identities;
  for (const auto& file : masked) {
    EXPECT_EQ(sh(s, "wc -c < " + file), "0\n") << file;
    EXPECT_EQ(sh(s, "stat -c '%F %a' " + file), "regular empty file 444\n") << file;
    expect_read_only(s, file);
    // every mask, the clones of the first too, carries the first's attributes
    const std::string options = sh(s, "awk '$5 == \"" + file + "\" {print $6}' /proc/self/mountinfo");
    for (const char* attribute : {"ro,", "nosuid", "nodev", "noexec"}) {
      EXPECT_NE(options.find(attribute), std::string::npos) << file << ": " << options;
    }
    identities += "stat -c '%d %i' " + file + ";";
  }
  const std::string seen = sh(s, identities + " true");
  EXPECT_EQ(distinct_lines(seen), 1u) << seen;
}

TEST_F(IsolationTest, NetworkNoneIsLoopbackOnlyAndUp) {
  auto s = create();
  EXPECT_EQ(sh(s, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"), "lo\n");
  // loopback works: a server and a client inside the sandbox
  const std::string out =
      sh(s,
         "python3 -c 'import socket;s=socket.socket();s.bind((\"127.0.0.1\",0));s.listen();"
         "c=socket.create_connection(s.getsockname());a,_=s.accept();a.send(b\"ok\");print(c.recv(2).decode())'");
  EXPECT_EQ(out, "ok\n");
  // anything else is unreachable
  auto r = s.exec({"python3", "-c", "import socket;socket.create_connection(('192.0.2.1',80),timeout=2)"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stderr.find("unreachable"), std::string::npos) << r.stderr;
}

TEST_F(IsolationTest, TheHostsControllingTerminalIsOutOfReach) {
  // An engine whose process has a terminal (a person running mayura-run):
  // nothing inside may open it as /dev/tty (TIOCSTI would type into it).
  int master = -1;
  const NativeOptions o = options();
  const pid_t child = ::forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 2;
    try {
      // (its own scope: the engine ends, zygote and places, before _exit)
      auto sbs = create_sandboxes(native_sandboxes(o), {});
      CreateOptions c;
      c.lifetime_ms = 60'000;
      auto s = sbs.create(c);
      auto r = s.exec({"/bin/sh", "-c", "echo x > /dev/tty; cut -d' ' -f7 /proc/self/stat"});
      code = (r.exit_code == 0 && r.stdout == "0\n" && r.stderr.find("No such device") != std::string::npos) ? 0 : 1;
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  // drain the terminal so the child never blocks on it
  std::thread drain([master] {
    char buf[256];
    while (::read(master, buf, sizeof buf) > 0) {
    }
  });
  ::waitpid(child, &status, 0);
  ::close(master);
  drain.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(IsolationTest, FeaturesAreHonest) {
  const Features f = sandboxes().features();
  EXPECT_EQ(f.network, (std::vector<NetworkKind>{NetworkKind::none, NetworkKind::allowlist, NetworkKind::all}));
  EXPECT_TRUE(f.ports);
  // this host (hybrid) enforces every limit, on cgroup v1
  EXPECT_TRUE(f.cpus);
  EXPECT_TRUE(f.memory);
  EXPECT_TRUE(f.pids);
  EXPECT_TRUE(f.seccomp);
  EXPECT_TRUE(f.stdin);
  CreateOptions c;
  c.lifetime_ms = 10'000;
  c.network = Network::all();  // supported, but not listed in create_sandboxes' network
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::PERMISSION_DENIED);
  c.network = Network::none();
  c.ports = {80, 80};
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  EXPECT_EQ(sandboxes().size(), 0u);
}

}  // namespace
}  // namespace mayura::testing
