// The attack suite's probe: a static program copied into a sandbox that makes
// raw system calls and prints one `name=RESULT` line per attempt, RESULT being
// `ok` (possibly `ok:DETAIL`) or the errno's name (EPERM, EROFS...), so the
// tests can assert exact outcomes. Static and without sanitizers: it runs in
// any image and under any seccomp profile.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <linux/capability.h>

#include "tests/support/ia32_entry.hpp"

namespace {

std::string err_name(int e) {
  const char* n = ::strerrorname_np(e);
  return n ? n : "E" + std::to_string(e);
}

// Prints name=ok or name=ERRNO for a raw syscall's return value.
long report(const std::string& name, long rc) {
  if (rc < 0) {
    std::printf("%s=%s\n", name.c_str(), err_name(errno).c_str());
  } else {
    std::printf("%s=ok\n", name.c_str());
  }
  std::fflush(stdout);
  return rc;
}

long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  return ::syscall(nr, a, b, c, d, e, f);
}

long ptr(const void* p) { return reinterpret_cast<long>(p); }

// clone with the given flags; a child that appears exits at once.
long try_clone(unsigned long flags) {
  long rc = sys(SYS_clone, static_cast<long>(flags | SIGCHLD), 0, 0, 0, 0);
  if (rc == 0) ::_exit(0);
  if (rc > 0) ::waitpid(static_cast<pid_t>(rc), nullptr, 0);
  return rc;
}

int cmd_syscalls() {
  ::mkdir("/tmp/probe-mnt", 0700);
  report("mount", sys(SYS_mount, ptr("none"), ptr("/tmp/probe-mnt"), ptr("tmpfs"), 0, 0));
  report("umount2", sys(SYS_umount2, ptr("/tmp"), MNT_DETACH));
  report("fsopen", sys(SYS_fsopen, ptr("tmpfs"), 0));
  report("fsmount", sys(SYS_fsmount, 3, 0, 0));
  report("fspick", sys(SYS_fspick, AT_FDCWD, ptr("/tmp"), 0));
  report("move_mount", sys(SYS_move_mount, AT_FDCWD, ptr("/tmp"), AT_FDCWD, ptr("/tmp/probe-mnt"), 0));
  report("open_tree", sys(SYS_open_tree, AT_FDCWD, ptr("/tmp"), 1 /* OPEN_TREE_CLONE */));
  report("mount_setattr", sys(SYS_mount_setattr, AT_FDCWD, ptr("/tmp"), 0, 0, 0));
  report("unshare", sys(SYS_unshare, CLONE_NEWNS));
  report("setns", sys(SYS_setns, 0, 0));
  const struct {
    const char* name;
    unsigned long flag;
  } kinds[] = {{"NEWNS", CLONE_NEWNS},         {"NEWUTS", CLONE_NEWUTS}, {"NEWIPC", CLONE_NEWIPC},
               {"NEWUSER", CLONE_NEWUSER},     {"NEWPID", CLONE_NEWPID}, {"NEWNET", CLONE_NEWNET},
               {"NEWCGROUP", CLONE_NEWCGROUP}, {"NEWTIME", 0x80}};
  for (const auto& k : kinds) report(std::string("clone_") + k.name, try_clone(k.flag));
  report("clone_plain", try_clone(0));
  // clone3 with a valid struct asking for a new user namespace
  std::uint64_t args[11] = {};
  args[0] = CLONE_NEWUSER;
  args[4] = SIGCHLD;
  long c3 = sys(SYS_clone3, ptr(args), sizeof args);
  if (c3 == 0) ::_exit(0);
  if (c3 > 0) ::waitpid(static_cast<pid_t>(c3), nullptr, 0);
  report("clone3", c3);
  report("pivot_root", sys(SYS_pivot_root, ptr("/tmp"), ptr("/tmp/probe-mnt")));
  report("chroot", sys(SYS_chroot, ptr("/tmp")));
  report("keyctl", sys(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
  report("add_key", sys(SYS_add_key, ptr("user"), ptr("probe"), ptr("x"), 1, -3));
  report("request_key", sys(SYS_request_key, ptr("user"), ptr("probe"), 0, -3));
  char attr[128] = {};
  report("bpf", sys(SYS_bpf, 0 /* BPF_MAP_CREATE */, ptr(attr), sizeof attr));
  char pattr[128] = {};
  pattr[4] = static_cast<char>(sizeof pattr);  // size field
  report("perf_event_open", sys(SYS_perf_event_open, ptr(pattr), 0, -1, -1, 0));
  report("userfaultfd", sys(SYS_userfaultfd, 0));
  char params[120] = {};
  report("io_uring_setup", sys(SYS_io_uring_setup, 1, ptr(params)));
  report("kexec_load", sys(SYS_kexec_load, 0, 0, 0, 0));
  report("kexec_file_load", sys(SYS_kexec_file_load, -1, -1, 0, ptr(""), 0));
  report("init_module", sys(SYS_init_module, 0, 0, ptr("")));
  report("finit_module", sys(SYS_finit_module, 0, ptr(""), 0));
  report("delete_module", sys(SYS_delete_module, ptr("probe"), 0));
  char handle[136] = {};
  handle[0] = 8;  // handle_bytes
  report("open_by_handle_at", sys(SYS_open_by_handle_at, AT_FDCWD, ptr(handle), O_RDONLY));
  report("name_to_handle_at", sys(SYS_name_to_handle_at, AT_FDCWD, ptr("/tmp"), ptr(handle), ptr(attr), 0));
  report("personality_read_implies_exec", sys(SYS_personality, 0x400000));
  report("personality_query", sys(SYS_personality, 0xffffffffL));
  report("x32_getpid", sys(SYS_getpid | 0x40000000L));
  return 0;
}

int cmd_tiocsti() {
  int m = ::open("/dev/ptmx", O_RDWR | O_NOCTTY);
  if (report("ptmx", m) < 0) return 1;
  ::grantpt(m);
  ::unlockpt(m);
  int s = ::open(::ptsname(m), O_RDWR | O_NOCTTY);
  if (report("pts", s) < 0) return 1;
  char c = 'x';
  report("tiocsti", sys(SYS_ioctl, s, TIOCSTI, ptr(&c)));
  report("tiocsti_high", sys(SYS_ioctl, s, static_cast<long>(0x100000000UL | TIOCSTI), ptr(&c)));
  report("tiocsti_master", sys(SYS_ioctl, m, TIOCSTI, ptr(&c)));
  char sub = 2;  // TIOCL_SETSEL-ish subcode; refused before it is read
  report("tioclinux", sys(SYS_ioctl, s, TIOCLINUX, ptr(&sub)));
  struct winsize ws {};
  report("tiocgwinsz", sys(SYS_ioctl, s, TIOCGWINSZ, ptr(&ws)));
  return 0;
}

// i386 getpid through int $0x80, in a child: the result, or the signal that
// ended it.
int cmd_int80() {
  pid_t child = ::fork();
  if (child == 0) {
    const long rc = mayura::testing::int80_getpid_in_child();
    ::_exit(rc == -EPERM ? 1 : rc > 0 ? 0 : 2);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    std::printf("int80=%s\n", ::sigabbrev_np(WTERMSIG(status)));
  } else {
    const int code = WEXITSTATUS(status);
    std::printf("int80=%s\n", code == 0 ? "ok" : code == 1 ? "EPERM" : "other");
  }
  return 0;
}

int cmd_privilege() {
  struct __user_cap_header_struct hdr {};
  struct __user_cap_data_struct data[2]{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  report("capget", sys(SYS_capget, ptr(&hdr), ptr(data)));
  std::printf("cap_effective=%x,%x\n", data[0].effective, data[1].effective);
  data[0].effective = data[0].permitted = 1u << CAP_SYS_ADMIN;
  data[0].inheritable = 1u << CAP_SYS_ADMIN;
  report("capset", sys(SYS_capset, ptr(&hdr), ptr(data)));
  report("setuid0", sys(SYS_setuid, 0));
  report("setresuid0", sys(SYS_setresuid, 0, 0, 0));
  report("setgid0", sys(SYS_setgid, 0));
  report("setgroups", sys(SYS_setgroups, 0, 0));
  std::printf("nnp=%ld\n", sys(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  report("nnp_unset", sys(SYS_prctl, PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0));
  std::printf("nnp_after=%ld\n", sys(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  report("unshare_user", sys(SYS_unshare, CLONE_NEWUSER));
  report("clone_user", try_clone(CLONE_NEWUSER));
  report("cap_ambient_raise", sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0));
  return 0;
}

int cmd_ids() {
  uid_t r, e, s;
  gid_t gr, ge, gs;
  ::getresuid(&r, &e, &s);
  ::getresgid(&gr, &ge, &gs);
  std::printf("uids=%u,%u,%u\ngids=%u,%u,%u\n", r, e, s, gr, ge, gs);
  return 0;
}

std::string read_small(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "";
  char buf[8192];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
}

std::string line_of(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  if (at == std::string::npos) return "";
  const auto end = text.find('\n', at);
  std::string l = text.substr(at + key.size(), end - at - key.size());
  for (char& ch : l)
    if (ch == '\t') ch = ',';
  while (!l.empty() && l[0] == ',') l.erase(0, 1);
  return l;
}

// Runs PATH (stdin a pipe nobody writes, so it waits) and prints whether the
// exec happened (exec=ok, or the errno execv failed with: a close-on-exec
// pipe the child writes its errno to only if execv returns) and the ids the
// new program runs with once it waits on its stdin (or has ended).
int cmd_suid(char** argv) {
  int p[2];
  int told[2];
  if (::pipe(p) != 0 || ::pipe2(told, O_CLOEXEC) != 0) return 1;
  pid_t child = ::fork();
  if (child == 0) {
    ::close(told[0]);
    ::dup2(p[0], 0);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(argv[0], argv);
    const int e = errno;
    (void)!::write(told[1], &e, sizeof e);
    ::_exit(99);
  }
  ::close(told[1]);
  int exec_errno = 0;
  const ssize_t got = ::read(told[0], &exec_errno, sizeof exec_errno);
  ::close(told[0]);
  // end of file with nothing read: the descriptor closed at a successful exec
  const bool execd = got == 0;
  std::printf("exec=%s\n", execd ? "ok" : got == sizeof exec_errno ? err_name(exec_errno).c_str() : "unknown");
  const std::string proc = "/proc/" + std::to_string(child);
  char target[4096];
  ::realpath(argv[0], target);
  std::string status;
  bool seen = false;
  for (int i = 0; execd && i < 600; ++i) {
    char exe[4096] = {};
    ssize_t n = ::readlink((proc + "/exe").c_str(), exe, sizeof exe - 1);
    if (n < 0 && errno == EACCES) {
      std::printf("exe=EACCES\n");  // it is no longer ours: it gained privileges
    }
    status = read_small(proc + "/status");
    const std::string state = line_of(status, "State:");
    // sleeping in the new program (its ids committed), or already ended
    if ((n > 0 && std::strcmp(exe, target) == 0 && state.rfind('S', 0) == 0) || state.rfind('Z', 0) == 0) {
      seen = n > 0;
      break;
    }
    ::usleep(5000);
  }
  if (!execd) status = read_small(proc + "/status");
  std::printf("execd=%d\nuid=%s\ngid=%s\n", seen ? 1 : 0, line_of(status, "Uid:").c_str(),
              line_of(status, "Gid:").c_str());
  ::kill(child, SIGKILL);
  int ws = 0;
  ::waitpid(child, &ws, 0);
  std::printf("exit=%d\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
  return 0;
}

int open_flags(const std::string& mode) {
  if (mode == "r") return O_RDONLY;
  if (mode == "w") return O_WRONLY;
  if (mode == "rw") return O_RDWR;
  if (mode == "c") return O_WRONLY | O_CREAT | O_EXCL;
  if (mode == "t") return O_WRONLY | O_TRUNC;
  if (mode == "d") return O_RDONLY | O_DIRECTORY;
  return O_RDONLY;
}

// open PATH MODE [NAME]
int cmd_open(int argc, char** argv) {
  const std::string name = argc > 2 ? argv[2] : "open";
  report(name, ::open(argv[0], open_flags(argv[1]) | O_NONBLOCK, 0644));
  return 0;
}

// read PATH: ok:BYTES (up to 1 MiB) or the errno
int cmd_read(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "read";
  int fd = ::open(argv[0], O_RDONLY | O_NONBLOCK);
  if (fd < 0) return report(name, -1), 0;
  std::size_t total = 0;
  char buf[65536];
  while (total < (1u << 20)) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      std::printf("%s=%s\n", name.c_str(), err_name(errno).c_str());
      return 0;
    }
    if (n == 0) break;
    total += static_cast<std::size_t>(n);
  }
  std::printf("%s=ok:%zu\n", name.c_str(), total);
  return 0;
}

// write PATH DATA [NAME]: open O_WRONLY and write
int cmd_write(int argc, char** argv) {
  const std::string name = argc > 2 ? argv[2] : "write";
  int fd = ::open(argv[0], O_WRONLY);
  if (fd < 0) return report(name, -1), 0;
  report(name, ::write(fd, argv[1], std::strlen(argv[1])));
  return 0;
}

// mount SOURCE TARGET TYPE [DATA]
int cmd_mount(int argc, char** argv) {
  ::mkdir(argv[1], 0700);
  report("mount", sys(SYS_mount, ptr(argv[0]), ptr(argv[1]), ptr(argv[2]), 0, argc > 3 ? ptr(argv[3]) : 0));
  return 0;
}

int cmd_umount(char** argv) {
  report("umount", sys(SYS_umount2, ptr(argv[0]), MNT_DETACH));
  report("umount_plain", sys(SYS_umount2, ptr(argv[0]), 0));
  return 0;
}

int cmd_stat(char** argv) {
  struct stat st {};
  if (report("stat", ::lstat(argv[0], &st)) == 0) std::printf("mode=%o\n", st.st_mode & 07777);
  return 0;
}

int cmd_readlink(char** argv) {
  char buf[4096];
  report("readlink", ::readlink(argv[0], buf, sizeof buf));
  return 0;
}

// fds: the descriptors open in this process (not the directory's own)
int cmd_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return report("fds", -1), 0;
  std::vector<int> fds;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd != ::dirfd(d)) fds.push_back(fd);
  }
  ::closedir(d);
  std::string out;
  for (int fd : fds) out += (out.empty() ? "" : ",") + std::to_string(fd);
  std::printf("fds=%s\n", out.c_str());
  return 0;
}

// procs: every process this pid namespace's /proc shows, as pid:comm
int cmd_procs() {
  DIR* d = ::opendir("/proc");
  if (!d) return report("procs", -1), 0;
  int count = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string comm = read_small(std::string("/proc/") + e->d_name + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    std::printf("proc=%s:%s\n", e->d_name, comm.c_str());
    ++count;
  }
  ::closedir(d);
  std::printf("self=%d\ncount=%d\n", ::getpid(), count);
  return 0;
}

int cmd_ptrace(char** argv) {
  report("ptrace_attach", sys(SYS_ptrace, PTRACE_ATTACH, std::atoi(argv[0]), 0, 0));
  report("ptrace_seize", sys(SYS_ptrace, PTRACE_SEIZE, std::atoi(argv[0]), 0, 0));
  return 0;
}

int cmd_kill(char** argv) {
  report("kill", sys(SYS_kill, std::atoi(argv[0]), std::atoi(argv[1])));
  return 0;
}

int cmd_net() {
  sockaddr_in far{};
  far.sin_family = AF_INET;
  ::inet_pton(AF_INET, "192.0.2.1", &far.sin_addr);  // TEST-NET-1: documentation only
  far.sin_port = htons(80);
  int t = ::socket(AF_INET, SOCK_STREAM, 0);
  report("tcp_connect", ::connect(t, reinterpret_cast<sockaddr*>(&far), sizeof far));
  ::close(t);
  far.sin_port = htons(53);
  int u = ::socket(AF_INET, SOCK_DGRAM, 0);
  report("udp_sendto", ::sendto(u, "x", 1, 0, reinterpret_cast<sockaddr*>(&far), sizeof far));
  ::close(u);
  report("vsock", ::socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
  report("vsock_high", sys(SYS_socket, static_cast<long>(0x100000000UL | 40), SOCK_STREAM, 0));

  // a server and a client on loopback
  int srv = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in lo{};
  lo.sin_family = AF_INET;
  lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof lo;
  bool ok = ::bind(srv, reinterpret_cast<sockaddr*>(&lo), sizeof lo) == 0 && ::listen(srv, 1) == 0 &&
            ::getsockname(srv, reinterpret_cast<sockaddr*>(&lo), &len) == 0;
  int cli = ::socket(AF_INET, SOCK_STREAM, 0);
  ok = ok && ::connect(cli, reinterpret_cast<sockaddr*>(&lo), sizeof lo) == 0;
  int acc = ok ? ::accept(srv, nullptr, nullptr) : -1;
  char got = 0;
  ok = ok && acc >= 0 && ::write(cli, "y", 1) == 1 && ::read(acc, &got, 1) == 1 && got == 'y';
  std::printf("loopback=%s\n", ok ? "ok" : err_name(errno).c_str());

  // netlink: allowed, but setting lo down is refused
  int nl = ::socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
  if (report("netlink", nl) >= 0) {
    struct {
      nlmsghdr h;
      ifinfomsg i;
    } req{};
    req.h.nlmsg_len = sizeof req;
    req.h.nlmsg_type = RTM_NEWLINK;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    req.h.nlmsg_seq = 1;
    req.i.ifi_family = AF_UNSPEC;
    req.i.ifi_index = static_cast<int>(::if_nametoindex("lo"));
    req.i.ifi_change = IFF_UP;
    req.i.ifi_flags = 0;
    if (::send(nl, &req, sizeof req, 0) < 0) {
      report("newlink", -1);
    } else {
      char buf[4096];
      ssize_t n = ::recv(nl, buf, sizeof buf, 0);
      auto* h = reinterpret_cast<nlmsghdr*>(buf);
      if (n >= static_cast<ssize_t>(sizeof(nlmsghdr) + sizeof(nlmsgerr)) && h->nlmsg_type == NLMSG_ERROR) {
        nlmsgerr ne{};
        std::memcpy(&ne, buf + NLMSG_HDRLEN, sizeof ne);
        int e = -ne.error;
        std::printf("newlink=%s\n", e == 0 ? "ok" : err_name(e).c_str());
      } else {
        std::printf("newlink=noack\n");
      }
    }
  }
  return 0;
}

// fill PATH BYTES: write until BYTES or an error
int cmd_fill(char** argv) {
  int fd = ::open(argv[0], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return report("fill", -1), 0;
  const std::size_t want = std::strtoull(argv[1], nullptr, 10);
  static char block[1 << 16];
  std::memset(block, 'a', sizeof block);
  std::size_t done = 0;
  while (done < want) {
    ssize_t n = ::write(fd, block, sizeof block);
    if (n < 0) {
      std::printf("fill=%s\nwritten=%zu\n", err_name(errno).c_str(), done);
      return 0;
    }
    done += static_cast<std::size_t>(n);
  }
  std::printf("fill=ok\nwritten=%zu\n", done);
  return 0;
}

// files DIR N [NAMELEN]: create N empty files, each name padded with 'x'
// to NAMELEN bytes (at least its number's)
int cmd_files(int argc, char** argv) {
  ::mkdir(argv[0], 0755);
  const int n = std::atoi(argv[1]);
  const std::size_t length = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 0;
  const int dir = ::open(argv[0], O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < n; ++i) {
    std::string name = "f" + std::to_string(i);
    if (name.size() < length) name.append(length - name.size(), 'x');
    int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd < 0) {
      std::printf("files=%s\ncreated=%d\n", err_name(errno).c_str(), i);
      return 0;
    }
    ::close(fd);
  }
  std::printf("files=ok\ncreated=%d\n", n);
  return 0;
}

// deep DIR N: DIR/d/d/.../d, N directories below DIR, made relative to
// each other (the whole path is far longer than PATH_MAX)
int cmd_deep(char** argv) {
  ::mkdir(argv[0], 0755);
  int dir = ::open(argv[0], O_RDONLY | O_DIRECTORY);
  const int n = std::atoi(argv[1]);
  for (int i = 0; i < n; ++i) {
    if (::mkdirat(dir, "d", 0755) != 0) {
      std::printf("deep=%s\nlevels=%d\n", err_name(errno).c_str(), i);
      return 0;
    }
    const int next = ::openat(dir, "d", O_RDONLY | O_DIRECTORY);
    ::close(dir);
    dir = next;
  }
  std::printf("deep=ok\nlevels=%d\n", n);
  return 0;
}

double now(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void* spin(void* arg) {
  const double until = *static_cast<double*>(arg);
  volatile unsigned long x = 0;
  while (now(CLOCK_MONOTONIC) < until) {
    for (int i = 0; i < 10000; ++i) x = x + 1;
  }
  return nullptr;
}

bool exists(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0;
}

void* spin_until(void* arg) {
  const char* file = static_cast<const char*>(arg);
  volatile unsigned long x = 0;
  while (!exists(file)) {
    for (int i = 0; i < 100000; ++i) x = x + 1;
  }
  return nullptr;
}

// busy-until FILE THREADS: spin on THREADS threads until FILE exists; prints
// busy=spinning once they all run, then the process's cpu time in ms
int cmd_busy_until(char** argv) {
  const int threads = std::atoi(argv[1]);
  std::vector<pthread_t> ts(static_cast<std::size_t>(threads));
  for (auto& t : ts) ::pthread_create(&t, nullptr, spin_until, argv[0]);
  std::printf("busy=spinning\n");
  std::fflush(stdout);
  for (auto& t : ts) ::pthread_join(t, nullptr);
  std::printf("cpu_ms=%ld\n", static_cast<long>(now(CLOCK_PROCESS_CPUTIME_ID) * 1000.0));
  return 0;
}

// busy MS THREADS: spin for MS of wall time on THREADS threads; prints the
// process's cpu time in ms
int cmd_busy(char** argv) {
  double until = now(CLOCK_MONOTONIC) + std::atof(argv[0]) / 1000.0;
  const int threads = std::atoi(argv[1]);
  std::vector<pthread_t> ts(static_cast<std::size_t>(threads));
  for (auto& t : ts) ::pthread_create(&t, nullptr, spin, &until);
  for (auto& t : ts) ::pthread_join(t, nullptr);
  std::printf("cpu_ms=%ld\n", static_cast<long>(now(CLOCK_PROCESS_CPUTIME_ID) * 1000.0));
  return 0;
}

// mem [MIB FILE]: touch memory until killed; given MIB and FILE, first
// touches MIB MiB, prints mem=holding and waits until FILE exists
int cmd_mem(int argc, char** argv) {
  if (argc >= 2) {
    const long mib = std::atol(argv[0]);
    for (long i = 0; i < mib; ++i) {
      char* p = static_cast<char*>(std::malloc(1 << 20));
      if (p) std::memset(p, 1, 1 << 20);
    }
    std::printf("mem=holding\n");
    std::fflush(stdout);
    while (!exists(argv[1])) ::usleep(10000);
  }
  for (;;) {
    char* p = static_cast<char*>(std::malloc(1 << 20));
    if (!p) continue;
    std::memset(p, 1, 1 << 20);
  }
}

// forkbomb: every process forks forever; a process whose fork fails says
// so once (fork=ERRNO, e.g. EAGAIN at the pids bound), so a test can see the
// bound was reached
int cmd_forkbomb() {
  bool told = false;
  for (;;) {
    if (::fork() < 0) {
      if (!told) {
        told = true;
        const std::string line = "fork=" + err_name(errno) + "\n";
        (void)!::write(1, line.data(), line.size());
      }
      ::usleep(1000);
    }
  }
}

// swap DIR LINK TARGET MS [STOP]: makes DIR a directory and LINK a symlink
// to TARGET, prints swap=started, then exchanges the two names for MS
// milliseconds or, given STOP, until the file STOP exists
int cmd_swap(int argc, char** argv) {
  ::mkdir(argv[0], 0755);
  ::unlink(argv[1]);
  if (::symlink(argv[2], argv[1]) != 0) return report("symlink", -1), 1;
  std::printf("swap=started\n");
  std::fflush(stdout);
  const double until = now(CLOCK_MONOTONIC) + std::atof(argv[3]) / 1000.0;
  const char* stop = argc > 4 ? argv[4] : nullptr;
  long swaps = 0;
  for (long i = 0; stop ? !(i % 64 == 0 && exists(stop)) : now(CLOCK_MONOTONIC) < until; ++i) {
    if (sys(SYS_renameat2, AT_FDCWD, ptr(argv[0]), AT_FDCWD, ptr(argv[1]), 2 /* RENAME_EXCHANGE */) == 0) ++swaps;
    if (stop && now(CLOCK_MONOTONIC) >= until) break;
  }
  std::printf("swaps=%ld\n", swaps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: probe SUBCOMMAND [ARGS]\n");
    return 2;
  }
  const std::string c = argv[1];
  char** a = argv + 2;
  const int n = argc - 2;
  if (c == "syscalls") return cmd_syscalls();
  if (c == "tiocsti") return cmd_tiocsti();
  if (c == "int80") return cmd_int80();
  if (c == "privilege") return cmd_privilege();
  if (c == "ids") return cmd_ids();
  if (c == "suid" && n >= 1) return cmd_suid(a);
  if (c == "open" && n >= 2) return cmd_open(n, a);
  if (c == "read" && n >= 1) return cmd_read(n, a);
  if (c == "write" && n >= 2) return cmd_write(n, a);
  if (c == "mount" && n >= 3) return cmd_mount(n, a);
  if (c == "umount" && n >= 1) return cmd_umount(a);
  if (c == "stat" && n >= 1) return cmd_stat(a);
  if (c == "readlink" && n >= 1) return cmd_readlink(a);
  if (c == "fds") return cmd_fds();
  if (c == "procs") return cmd_procs();
  if (c == "ptrace" && n >= 1) return cmd_ptrace(a);
  if (c == "kill" && n >= 2) return cmd_kill(a);
  if (c == "net") return cmd_net();
  if (c == "fill" && n >= 2) return cmd_fill(a);
  if (c == "files" && n >= 2) return cmd_files(n, a);
  if (c == "deep" && n >= 2) return cmd_deep(a);
  if (c == "busy" && n >= 2) return cmd_busy(a);
  if (c == "busy-until" && n >= 2) return cmd_busy_until(a);
  if (c == "mem") return cmd_mem(n, a);
  if (c == "forkbomb") return cmd_forkbomb();
  if (c == "swap" && n >= 4) return cmd_swap(n, a);
  std::fprintf(stderr, "probe: unknown subcommand %s\n", c.c_str());
  return 2;
}
