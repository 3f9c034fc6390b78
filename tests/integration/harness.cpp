#include "harness.hpp"

#include <arpa/inet.h>
#include <grp.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <net/if.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <chrono>
#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/cgroups.hpp"
#include "engine/sandbox_disk.hpp"
#include "mayura/netfilter/loopback.hpp"
#include "mayura/netfilter/nftables.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {

std::string read_host(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run_shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

void make_certificate(const std::string& dir, const std::string& name) {
  const std::string out = run_shell(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
      " -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      dir + "/" + name + ".key -out " + dir + "/" + name + ".pem 2>&1 && echo made");
  EXPECT_NE(out.find("made"), std::string::npos) << "openssl req: " << out;
}

int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

rlim_t fd_limit_leaving(int room) {
  std::set<int> open;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) throw std::runtime_error("cannot list /proc/self/fd");
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != ::dirfd(dir)) open.insert(fd);
  }
  ::closedir(dir);
  int free = 0;
  for (int fd = 0;; ++fd) {
    if (open.count(fd) == 0 && ++free > room) return static_cast<rlim_t>(fd);
  }
}

namespace {

// Test ranges: 8 slots of 65536 ids each, from 0x40000000 up to the engine's
// default range (0x60000000 and 4095 slots above it), which a packaged
// mayurad or a mayura-run session on the same host uses: a test that took
// ids there would count their processes as its own leaks, and share host ids
// with their sandboxes.
constexpr std::uint32_t kIdBase = 0x40000000u;
constexpr std::uint32_t kIdSlots = 8;
constexpr std::uint32_t kIdRanges = 1024;
constexpr std::uint32_t kEnginesDefaultIdBase = 0x60000000u;  // NativeOptions{}.id_base, checked below
static_assert(kIdBase + std::uint64_t{kIdRanges} * kIdSlots * 65536u <= kEnginesDefaultIdBase);

// A host id range no other test process uses while this one lives: ranges
// are leased with an open-file-description lock on byte N of one lock file
// (released when the process exits). Deriving it from the pid alone let two
// tests whose pids differ by a multiple of the range count share one, and
// each took the other's sandboxes for its own leaks.
std::uint32_t id_range_of_this_process() {
  static const std::uint32_t range = [] {
    const int fd = ::open("/run/lock/mayura-test-id-ranges", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("opening the test id-range lock file failed");
    const auto first = static_cast<std::uint32_t>(::getpid()) % kIdRanges;
    for (std::uint32_t i = 0; i < kIdRanges; ++i) {
      const std::uint32_t candidate = (first + i) % kIdRanges;
      struct flock lock {};
      lock.l_type = F_WRLCK;
      lock.l_whence = SEEK_SET;
      lock.l_start = candidate;
      lock.l_len = 1;
      if (::fcntl(fd, F_OFD_SETLK, &lock) == 0) return candidate;  // fd stays open: the lock lives with the process
    }
    throw std::runtime_error("every test id range is in use");
  }();
  return range;
}

}  // namespace

// Host-side curl (and libcurl-less clients that honour the same variables)
// reach only what a test made: its own network namespaces and sockets. A
// proxy the environment names is out of their reach and would change their
// answers, so the test processes drop it before anything runs.
[[maybe_unused]] const bool kNoProxy = [] {
  for (const char* name : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"})
    ::unsetenv(name);
  return true;
}();

std::string test_layout() {
  // The VMs of tests/vm say what they made (the engine may since have moved
  // the test process, in a delegated subtree, so its cgroup no longer tells).
  if (const char* v = std::getenv("MAYURA_TEST_LAYOUT"); v && *v) return v;
  // Elsewhere, what this host is, asked once, before any engine moved us.
  static const std::string here = [] {
    const cgroups::Host host = cgroups::detect_host();
    if (host.layout == cgroups::Layout::hybrid) return "hybrid";
    if (host.layout == cgroups::Layout::legacy) return "v1";
    if (cgroups::own_cgroup(read_host("/proc/self/cgroup")).empty()) return "v2-root";
    return cgroups::plan_placement_here(host.v2, "").home.empty() ? "v2-login" : "v2-delegated";
  }();
  return here;
}

NativeOptions isolated_options() {
  NativeOptions o;
  const pid_t pid = ::getpid();
  o.state_dir = "/run/mayura-test-" + std::to_string(pid);
  // Where the engine would put its own root on this host (the top of the
  // hierarchy, or the delegated subtree it runs in), under a name of our own.
  o.cgroup_root = cgroups::default_root_for(cgroups::detect_host(), "mayura-test-" + std::to_string(pid));
  o.id_slots = kIdSlots;
  // Tests count cgroups and processes: a sandbox made ahead would be one more.
  // PreparedTest turns it on.
  o.prepared = 0;
  o.prepared_disks = 0;
  if (o.id_base != kEnginesDefaultIdBase) throw std::logic_error("the engine's default id base moved: move the tests'");
  o.id_base = kIdBase + id_range_of_this_process() * o.id_slots * 65536u;
  o.image_dir = "/run/mayura-test-" + std::to_string(pid) + "-images";
  // The store on a file system that can be idmapped: the VMs' kernel (6.1)
  // cannot idmap their tmpfs /run, so they name an ext4 disk.
  const char* store_dir = std::getenv("MAYURA_TEST_STORE_DIR");
  o.image_store =
      std::string(store_dir && *store_dir ? store_dir : "/run") + "/mayura-test-" + std::to_string(pid) + "-store";
  o.disk_dir =
      std::string(store_dir && *store_dir ? store_dir : "/run") + "/mayura-test-" + std::to_string(pid) + "-disks";
  // Snapshots on a disk, not tmpfs: the tests check that only what was
  // written is stored, which needs a file system that keeps holes.
  o.snapshot_dir = std::string(store_dir && *store_dir ? store_dir : "/var/tmp") + "/mayura-test-" +
                   std::to_string(pid) + "-snapshots";
  o.volume_dir =
      std::string(store_dir && *store_dir ? store_dir : "/run") + "/mayura-test-" + std::to_string(pid) + "-volumes";
  return o;
}

void enter_own_network_namespace() {
  ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << std::strerror(errno);
  const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(self, 0);
  EXPECT_EQ(netfilter::bring_up_loopback(self), 0);
  ::close(self);
}

OwnDefaultSocketDir::OwnDefaultSocketDir() {
  constexpr const char* kDir = "/run/mayura";
  const auto fail = [this](const std::string& step) {
    const int error = errno;
    if (host_namespace_ >= 0) ::close(host_namespace_);
    if (users_ >= 0) ::close(users_);
    throw std::runtime_error(step + ": " + std::strerror(error));
  };
  // Test processes that use the directory hold this lock shared. The last of
  // them removes the directory if it is empty, and only the last: removing a
  // directory that is a mount point in another namespace detaches the mount
  // there (a sibling test's private /run/mayura would be gone).
  users_ = ::open("/run/lock/mayura-test-default-socket-dir", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (users_ < 0 || ::flock(users_, LOCK_SH) != 0) fail("locking /run/lock/mayura-test-default-socket-dir");
  host_namespace_ = ::open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (host_namespace_ < 0) fail("opening the mount namespace");
  // Mounted on, so it must be there; an engine would make it the same way.
  if (::mkdir(kDir, 0755) != 0 && errno != EEXIST) fail("mkdir /run/mayura");
  if (::unshare(CLONE_NEWNS) != 0) fail("a mount namespace of the test's own");
  // A slave of the host's mounts: nothing mounted here reaches the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0 ||
      ::mount("none", kDir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m") != 0) {
    const int error = errno;
    ::setns(host_namespace_, CLONE_NEWNS);
    errno = error;
    fail("a private /run/mayura");
  }
}

OwnDefaultSocketDir::~OwnDefaultSocketDir() {
  // The namespace (and its tmpfs) goes with the last process in it. setns
  // refuses (EINVAL) while another thread shares this one's fs_struct, and a
  // thread the test started and joined can still hold it: the kernel wakes
  // the joiner before the thread's exit drops its file-system state.
  int entered = -1;
  for (int attempt = 0; attempt < 500; ++attempt) {
    entered = ::setns(host_namespace_, CLONE_NEWNS);
    if (entered == 0 || errno != EINVAL) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (entered != 0) ADD_FAILURE() << "back to the host's mounts: " << std::strerror(errno);
  ::close(host_namespace_);
  // The last test to use it: nothing of a sibling can be detached. (Not if
  // an engine uses it meanwhile: it is then not empty.)
  if (::flock(users_, LOCK_EX | LOCK_NB) == 0) ::rmdir("/run/mayura");
  ::close(users_);
}

std::vector<std::string> loop_devices_bound_under(const std::string& dir) {
  std::vector<std::string> found;
  for (const std::string& file : native::loop_bound_files()) {
    if (file.rfind(dir + "/", 0) == 0) found.push_back(file);
  }
  return found;
}

HostSnapshot HostSnapshot::take() {
  HostSnapshot s;
  std::istringstream in(read_host("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mount_point;
    f >> id >> parent >> dev >> root >> mount_point;
    // On a v1-only host the engine mounts the cgroup2 hierarchy it tracks
    // processes with once, and leaves it for every engine after it.
    if (mount_point == cgroups::kEngineCgroup2) continue;
    s.mounts.push_back(mount_point + " " + root);
  }
  std::sort(s.mounts.begin(), s.mounts.end());
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(entry.path(), ec).string();
    if (!ec && target.rfind("net:[", 0) == 0) s.network_namespaces.push_back(target);
  }
  std::sort(s.network_namespaces.begin(), s.network_namespaces.end());
  return s;
}

std::vector<pid_t> processes_in_range(const NativeOptions& o) {
  std::vector<pid_t> found;
  const std::uint64_t lo = o.id_base;
  const std::uint64_t hi = lo + static_cast<std::uint64_t>(o.id_slots) * 65536;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream status(read_host(entry.path() / "status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream ids(line.substr(4));
      std::uint64_t uid = 0;
      ids >> uid;
      if (uid >= lo && uid < hi) found.push_back(std::stoi(name));
    }
  }
  return found;
}

namespace {

// Exited, exiting or about to: SIGKILL pending (read first: once taken, it
// leaves the pending set just before the exit sets PF_EXITING), else the
// state or flags of /proc/PID/stat.
bool dying(pid_t pid) {
  constexpr unsigned long kExiting = 0x4;  // PF_EXITING
  const std::string proc = "/proc/" + std::to_string(pid);
  std::istringstream status(read_host(proc + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0) {
      if (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGKILL - 1))) return true;
    }
  }
  const std::string stat = read_host(proc + "/stat");
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return true;  // gone
  std::istringstream fields(stat.substr(paren + 1));
  std::string state, skip;
  unsigned long flags = 0;
  fields >> state >> skip >> skip >> skip >> skip >> skip >> flags;
  return state == "Z" || state == "X" || (flags & kExiting) != 0;
}

}  // namespace

std::vector<pid_t> processes_able_to_run(const NativeOptions& o) {
  std::vector<pid_t> running;
  for (pid_t pid : processes_in_range(o)) {
    // A process between taking its SIGKILL and PF_EXITING looks alive for an
    // instant, which an emulated cpu that preempts it there stretches: one
    // that still looks alive is looked at again, 2 ms apart, for 20 ms. One
    // that can run (nothing killed it) looks alive every time.
    bool alive = true;
    for (int look = 0; alive && look < 10; ++look) {
      if (look > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      alive = !dying(pid);
    }
    if (alive) running.push_back(pid);
  }
  return running;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int listening_sockets() {
  std::ifstream in("/proc/self/net/tcp");
  std::string line;
  std::getline(in, line);
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    f >> slot >> local >> remote >> state;
    n += state == "0A";
  }
  return n;
}

std::optional<std::string> output_as(uid_t uid, const std::function<void(int out)>& work) {
  int out[2];
  if (::pipe(out) != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(out[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(3);
    work(out[1]);
    ::_exit(0);
  }
  ::close(out[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return got;
}

void write_to(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string fetch_as(uid_t uid, int port) {
  const auto got = output_as(uid, [port](int out) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const timeval bound{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      return write_to(out, errno == ECONNREFUSED ? "refused" : "connect failed");
    constexpr std::string_view kRequest = "GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n";
    if (::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(kRequest.size())) ::_exit(4);
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      write_to(out, std::string_view(buf, static_cast<std::size_t>(n)));
  });
  return got.value_or("the child failed");
}

HostListener::HostListener(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(static_cast<std::uint16_t>(port));
  const int on = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 || ::listen(fd_, 64) != 0) {
    ADD_FAILURE() << "listening on port " << port << ": " << std::strerror(errno);
  }
}

HostListener::~HostListener() { ::close(fd_); }

int HostListener::take() {
  int n = 0;
  for (int c; (c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ++n) ::close(c);
  return n;
}

std::vector<std::string> links_named(const std::string& prefix) {
  std::vector<std::string> found;
  // if_nameindex asks netlink, so it sees the calling thread's namespace
  // (sysfs would show the one it was mounted in).
  if (struct if_nameindex* list = ::if_nameindex()) {
    for (const struct if_nameindex* i = list; i->if_index != 0; ++i) {
      if (std::string(i->if_name).rfind(prefix, 0) == 0) found.push_back(i->if_name);
    }
    ::if_freenameindex(list);
  }
  return found;
}

void expect_nothing_leaked(const NativeOptions& o, const HostSnapshot& before) {
  for (pid_t pid : processes_in_range(o)) {
    ADD_FAILURE() << "a sandbox process is still running: " << pid << " "
                  << read_host("/proc/" + std::to_string(pid) + "/stat");
  }
  // The engine removes its own places once nothing is in them.
  if (fs::exists(o.cgroup_root)) {
    ADD_FAILURE() << "cgroup root left: " << o.cgroup_root;
    for (const auto& e : fs::directory_iterator(o.cgroup_root)) {
      if (e.is_directory()) ADD_FAILURE() << "cgroup left: " << e.path();
    }
    ::rmdir(o.cgroup_root.c_str());
  }
  // ... and its roots on the v1 hierarchies that carry limits
  const std::string root_name = fs::path(o.cgroup_root).filename();
  const cgroups::Host host = cgroups::detect_host();
  for (const cgroups::Controller* c : {&host.memory, &host.cpu, &host.pids}) {
    if (c->v1.empty()) continue;
    const std::string v1_root = c->v1 + "/" + root_name;
    if (fs::exists(v1_root)) {
      ADD_FAILURE() << "v1 cgroup root left: " << v1_root;
      for (const auto& e : fs::directory_iterator(v1_root)) {
        if (e.is_directory()) ADD_FAILURE() << "v1 cgroup left: " << e.path();
      }
    }
  }
  if (fs::exists(o.state_dir)) {
    ADD_FAILURE() << "state directory left: " << o.state_dir;
    for (const auto& e : fs::recursive_directory_iterator(o.state_dir)) ADD_FAILURE() << "left: " << e.path();
    fs::remove_all(o.state_dir);
  }
  fs::remove_all(o.image_dir);
  fs::remove_all(o.image_store);
  // Disks: no file left, and no loop device still bound to one (a loop
  // device lets go of its file a moment after the last mount goes).
  if (fs::exists(o.disk_dir)) {
    for (const auto& e : fs::directory_iterator(o.disk_dir)) ADD_FAILURE() << "a disk was left: " << e.path();
    fs::remove_all(o.disk_dir);
  }
  // Snapshots and volumes: each test deletes its own; one left behind (a
  // fork's, a temporary file) is a leak, as is a loop device still bound
  // to a volume.
  for (const std::string& dir : {o.snapshot_dir, o.volume_dir}) {
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) ADD_FAILURE() << "a snapshot's or volume's file was left: " << e.path();
    }
  }
  std::vector<std::string> volumes_bound;
  eventually([&] { return (volumes_bound = loop_devices_bound_under(o.volume_dir)).empty(); },
             std::chrono::seconds(10));
  for (const std::string& device : volumes_bound) ADD_FAILURE() << "a loop device still holds a volume: " << device;
  fs::remove_all(o.snapshot_dir);
  fs::remove_all(o.volume_dir);
  std::vector<std::string> bound;
  eventually([&] { return (bound = loop_devices_bound_under(o.disk_dir)).empty(); }, std::chrono::seconds(10));
  for (const std::string& device : bound) ADD_FAILURE() << "a loop device still holds a disk: " << device;
  const HostSnapshot after = HostSnapshot::take();
  EXPECT_EQ(after.mounts, before.mounts) << "the host's mounts changed";
  EXPECT_EQ(after.network_namespaces, before.network_namespaces) << "a network namespace is still held open";
  // Network all's veths and table, in the namespace the test runs in.
  for (const std::string& link : links_named("mayura")) ADD_FAILURE() << "a veth of the engine was left: " << link;
  const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  const netfilter::NftResult tables = netfilter::run_nft(self, "list tables");
  ::close(self);
  EXPECT_TRUE(tables.ok) << tables.error;
  // Network all's table, and the published ports' table of this engine's id
  // range (another test's engine in the same namespace may hold its own).
  char ports_table[64];
  std::snprintf(ports_table, sizeof ports_table, "table ip mayura_ports_%08x\n", o.id_base);
  const std::string listed = "\n" + tables.output;
  EXPECT_EQ(listed.find("\ntable ip mayura\n"), std::string::npos)
      << "network all's nftables table was left: " << tables.output;
  EXPECT_EQ(listed.find(std::string("\n") + ports_table), std::string::npos)
      << "the engine's published ports' table was left: " << tables.output;
}

void remove_what_dead_tests_left() {
  std::error_code ec;
  std::set<pid_t> dead;
  for (const auto& e : fs::directory_iterator("/run", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("mayura-test-", 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + 12, nullptr, 10));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) dead.insert(pid);
  }
  const cgroups::Host host = cgroups::detect_host();
  for (const pid_t pid : dead) {
    const std::string name = "mayura-test-" + std::to_string(pid);
    cgroups::kill_and_remove(cgroups::default_root_for(host, name));
    for (const cgroups::Controller* c : {&host.memory, &host.cpu, &host.pids}) {
      if (!c->v1.empty()) cgroups::kill_and_remove(c->v1 + "/" + name);
    }
    for (const auto& e : fs::directory_iterator("/run", ec)) {
      const std::string entry = e.path().filename().string();
      if (entry == name || entry.rfind(name + "-", 0) == 0) fs::remove_all(e.path(), ec);
    }
  }
}

void NativeTest::SetUp() {
  // A test process that died before its TearDown (a sanitizer's abort, a
  // ctest timeout) left its sandboxes: no engine of a later test owns
  // their names, so the next test removes them, before its snapshot.
  remove_what_dead_tests_left();
  options_ = isolated_options();
  before_ = HostSnapshot::take();
}

void NativeTest::TearDown() {
  shutdown();
  // A fixture whose own SetUp failed before this one ran has failed already,
  // and has no snapshot to compare with (a host always has mounts).
  if (!before_.mounts.empty()) expect_nothing_leaked(options_, before_);
}

void NativeTest::shutdown() {
  if (sandboxes_) {
    sandboxes_->close();
    sandboxes_.reset();  // the provider goes with the last handle
  }
}

Sandboxes& NativeTest::sandboxes() {
  if (!sandboxes_) {
    if (limits_.max_sandboxes == 1) limits_.max_sandboxes = 4;
    sandboxes_ = create_sandboxes(native_sandboxes(options_), limits_);
  }
  return *sandboxes_;
}

Sandbox NativeTest::create(CreateOptions create) {
  if (create.lifetime_ms == 0) create.lifetime_ms = 120'000;
  return sandboxes().create(create);
}

std::string NativeTest::sh(const Sandbox& sandbox, const std::string& script, const ExecOptions& options) {
  const ExecResult r = sandbox.exec({"/bin/sh", "-c", script}, options);
  EXPECT_EQ(r.exit_code, 0) << script << "\nstdout: " << r.stdout << "\nstderr: " << r.stderr;
  return r.stdout;
}

namespace {

void copy_with_parents(const std::string& host, const fs::path& root) {
  const fs::path target = root / fs::path(host).relative_path();
  fs::create_directories(target.parent_path());
  fs::copy_file(fs::canonical(host), target, fs::copy_options::overwrite_existing);
  fs::permissions(target, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
}

std::vector<std::string> libraries_of(const std::string& binary) {
  std::vector<std::string> libs;
  FILE* p = ::popen(("ldd " + binary + " 2>/dev/null").c_str(), "r");
  if (!p) return libs;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    std::string l(line);
    for (std::size_t at = l.find('/'); at != std::string::npos; at = std::string::npos) {
      std::string path = l.substr(at);
      path = path.substr(0, path.find_first_of(" \n"));
      libs.push_back(path);
    }
  }
  ::pclose(p);
  return libs;
}

}  // namespace

std::string make_tiny_image(const std::string& parent, const std::vector<std::string>& extra) {
  fs::create_directories(parent);
  const fs::path root = parent;
  fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  std::vector<std::string> files = {"/bin/sh"};
  files.insert(files.end(), extra.begin(), extra.end());
  for (const auto& f : files) {
    copy_with_parents(f, root);
    for (const auto& lib : libraries_of(f)) copy_with_parents(lib, root);
  }
  fs::create_directories(root / "etc");
  std::ofstream(root / "etc" / "hostname") << "image\n";
  std::ofstream(root / "etc" / "marker") << "tiny image\n";
  // every directory must be traversable by the sandbox's users
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_directory())
      fs::permissions(e.path(), fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
  }
  return root.string();
}

void stop_mayurad(pid_t pid, const NativeOptions& options) {
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "mayurad ended with " << status;
  for (int i = 0; i < 200 && !processes_in_range(options).empty(); ++i) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool wait_until_served(const std::string& path, std::chrono::milliseconds bound) {
  return eventually(
      [&] {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
        const bool served = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        if (fd >= 0) ::close(fd);
        return served;
      },
      bound);
}

nlohmann::json daemon_config(const NativeOptions& o, const std::string& socket, const nlohmann::json& extra) {
  nlohmann::json config = {{"socket", socket},
                           {"stateDir", o.state_dir},
                           {"cgroupRoot", o.cgroup_root},
                           {"idBase", o.id_base},
                           {"idSlots", o.id_slots},
                           {"prepared", 0},
                           {"preparedDisks", 0},
                           {"liveRestore", false},
                           {"netnsPool", 0},
                           {"imageDir", o.image_dir},
                           {"imageStore", o.image_store},
                           {"diskDir", o.disk_dir},
                           {"snapshotDir", o.snapshot_dir},
                           {"volumeDir", o.volume_dir}};
  config.update(extra);
  return config;
}

pid_t start_mayurad(const std::string& program, const std::string& config, bool quiet) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the test died before the prctl
    if (quiet) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
    }
    ::execl(program.c_str(), "mayurad", "--config", config.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

}  // namespace mayura::testing
