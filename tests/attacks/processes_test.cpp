// Processes: the sandbox's init cannot be traced, signalled or read, a
// command's kill -1 reaches only its own sandbox, and nothing of the host
// or the engine is visible in its pid namespace.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <sstream>

#include "attack.hpp"

namespace mayura::testing {
namespace {

using ProcessesTest = AttackTest;

// A host process outside any sandbox, running as uid 1000 (the sandbox
// user's number) until killed.
class HostProcess {
 public:
  HostProcess() {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (::setresgid(1000, 1000, 1000) != 0 || ::setresuid(1000, 1000, 1000) != 0) ::_exit(3);
      for (;;) ::pause();
    }
  }
  ~HostProcess() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool alive() const {
    int status = 0;
    return ::waitpid(pid_, &status, WNOHANG) == 0;
  }

 private:
  pid_t pid_ = -1;
};

TEST_F(ProcessesTest, InitCannotBeTracedOrKilled) {
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"ptrace", "1"});
  EXPECT_EQ(r["ptrace_attach"], "EPERM");
  EXPECT_EQ(r["ptrace_seize"], "EPERM");
  EXPECT_EQ(probe(s, {"kill", "1", "9"})["kill"], "EPERM");
  EXPECT_EQ(probe(s, {"kill", "1", "15"})["kill"], "EPERM");
  EXPECT_EQ(sh(s, "echo alive"), "alive\n");
}

TEST_F(ProcessesTest, InitsFilesCannotBeOpened) {
  auto s = create();
  install_probe(s);
  for (const char* f :
       {"/proc/1/exe", "/proc/1/environ", "/proc/1/mem", "/proc/1/maps", "/proc/1/root/", "/proc/1/cwd/"}) {
    const std::string got = probe(s, {"open", f, "r"})["open"];
    EXPECT_TRUE(got == "EACCES" || got == "EPERM") << f << ": " << got;
  }
  EXPECT_EQ(probe(s, {"open", "/proc/1/mem", "rw"})["open"], "EACCES");
  EXPECT_EQ(probe(s, {"readlink", "/proc/1/exe"})["readlink"], "EACCES");
}

// The next command's process, started ahead by the init while another
// command runs, keeps the init's ids until it has its command: the sandbox
// user's commands can neither signal, stop, trace nor read it.
TEST_F(ProcessesTest, TheProcessMadeAheadCannotBeTouched) {
  auto s = create();
  install_probe(s);
  ExecOptions o;
  o.timeout_ms = 20000;
  auto attacker = std::async(std::launch::async, [&] {
    return s.exec(
        {"/bin/sh", "-c",
         "touch /tmp/attacking; p=; for i in $(seq 1000); do for c in /proc/[0-9]*/comm; do "
         "[ \"$(cat $c 2>/dev/null)\" = mayura-next ] && p=${c%/comm} && p=${p#/proc/} && break 2; done; "
         "sleep 0.01; done; echo pid=$p; "
         "for sig in 9 19 15; do /workspace/probe kill $p $sig; done; /workspace/probe ptrace $p; "
         "for f in environ mem maps exe root/ cwd/ fd/; do echo f=$f; /workspace/probe open /proc/$p/$f r; done"},
        o);
  });
  // Once the attacker runs, a command that ends leaves its cgroup spare,
  // and the init starts the next command's process in it. (Whether the
  // attacker runs is asked with file requests: a command would take the
  // process the attacker looks for.)
  auto attacking = [&] {
    try {
      s.read_file("/tmp/attacking");
      return true;
    } catch (const SandboxError&) {
      return false;
    }
  };
  for (int i = 0; i < 1000 && !attacking(); ++i) ::usleep(10000);
  EXPECT_EQ(sh(s, "true"), "");
  const ExecResult r = attacker.get();
  ASSERT_EQ(r.exit_code, 0) << r.stderr;
  ASSERT_NE(r.stdout.find("pid="), std::string::npos);
  ASSERT_EQ(r.stdout.find("pid=\n"), std::string::npos) << "no process made ahead was seen";
  const std::size_t at = r.stdout.find("pid=") + 4;
  const std::string pid = r.stdout.substr(at, r.stdout.find('\n', at) - at);
  std::istringstream lines(r.stdout);
  std::string line;
  std::string file;
  int refusals = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("f=", 0) == 0) file = line.substr(2);
    if (line.rfind("kill=", 0) == 0 || line.rfind("ptrace_", 0) == 0) {
      EXPECT_EQ(line.substr(line.find('=') + 1), "EPERM") << line;
      ++refusals;
    }
    if (line.rfind("open=", 0) == 0) {
      EXPECT_TRUE(line == "open=EACCES" || line == "open=EPERM") << file << ": " << line;
      ++refusals;
    }
  }
  EXPECT_EQ(refusals, 3 + 2 + 7) << r.stdout;
  // it is untouched: the next command is that process
  EXPECT_EQ(sh(s, "echo $$"), pid + "\n");
}

TEST_F(ProcessesTest, KillMinusOneReachesOnlyTheSandbox) {
  HostProcess outsider;
  ASSERT_GT(outsider.pid(), 0);
  auto s = create();
  auto other = create();
  sh(other, "setsid sleep 30 >/dev/null 2>&1 </dev/null & until pgrep -x sleep >/dev/null; do :; done");
  sh(s, "setsid sleep 30 >/dev/null 2>&1 </dev/null & until pgrep -x sleep >/dev/null; do :; done");
  auto r = s.exec({"/bin/sh", "-c", "kill -9 -1; echo after"});
  // the shell may kill itself with the rest; whatever it reports, nothing outside is hit
  EXPECT_TRUE(outsider.alive());
  EXPECT_EQ(sh(s, "echo again"), "again\n");
  // (pgrep's own exit code, not a count in a pipeline, which says 0 when pgrep fails: 0 is a match, 1 none, 2 and 3
  // a failure)
  const std::string survivors = sh(other, "pgrep -x sleep");
  EXPECT_EQ(std::count(survivors.begin(), survivors.end(), '\n'), 1) << survivors;
  // the sandbox's own sleep is gone
  const ExecResult gone = s.exec({"pgrep", "-x", "sleep"});
  EXPECT_EQ(gone.exit_code, 1) << gone.stdout << gone.stderr;
  EXPECT_EQ(gone.stdout, "");
}

TEST_F(ProcessesTest, OnlyItsOwnProcessesAreVisible) {
  HostProcess outsider;
  auto s = create();
  install_probe(s);
  auto r = s.exec({"/workspace/probe", "procs"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr;
  auto m = parse_results(r.stdout);
  // pid 1 (the engine's init) and the probe itself; no host process, no engine process
  std::istringstream in(r.stdout);
  std::string line;
  std::set<std::string> pids;
  while (std::getline(in, line)) {
    if (line.rfind("proc=", 0) == 0) pids.insert(line.substr(5, line.find(':') - 5));
  }
  EXPECT_EQ(m["count"], "2") << r.stdout;
  EXPECT_EQ(pids, (std::set<std::string>{"1", m["self"]})) << r.stdout;
  EXPECT_EQ(probe(s, {"kill", std::to_string(outsider.pid()), "0"})["kill"], "ESRCH");
  EXPECT_EQ(probe(s, {"kill", std::to_string(::getpid()), "0"})["kill"], "ESRCH");
  EXPECT_TRUE(outsider.alive());
}

TEST_F(ProcessesTest, InitCannotBeStopped) {
  auto s = create();
  install_probe(s);
  EXPECT_EQ(probe(s, {"kill", "1", "19"})["kill"], "EPERM");   // SIGSTOP
  EXPECT_EQ(probe(s, {"kill", "-1", "19"})["kill"], "ESRCH");  // nothing else of its own runs
  EXPECT_EQ(sh(s, "echo alive"), "alive\n");
}

// Two sandboxes share nothing a command could meet in: abstract unix
// sockets (network namespace), shared memory (own /dev/shm), SysV IPC.
TEST_F(ProcessesTest, SandboxesCannotMeetEachOther) {
  auto a = create();
  auto b = create();
  const std::string name = "mayura-attack-" + std::to_string(::getpid());
  ExecOptions eo;
  eo.timeout_ms = 60000;  // (it ends itself after 3 s; a loaded VM is slow to get there)
  auto server = std::async(std::launch::async, [&] {
    return a.exec({"/usr/bin/python3", "-c",
                   "import socket, time, sys\n"
                   "s = socket.socket(socket.AF_UNIX); s.bind('\\0" +
                       name +
                       "'); s.listen()\n"
                       "open('/dev/shm/" +
                       name +
                       "', 'w').write('a')\n"
                       "print('ready', flush=True); time.sleep(3)\n"},
                  eo);
  });
  // the server is up when its shm file is there
  for (int i = 0; i < 300; ++i) {
    try {
      if (a.read_file("/dev/shm/" + name) == "a") break;
    } catch (const SandboxError&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const ExecResult r = b.exec({"/usr/bin/python3", "-c",
                               "import socket, os, errno\n"
                               "s = socket.socket(socket.AF_UNIX)\n"
                               "try:\n  s.connect('\\0" +
                                   name +
                                   "'); print('connect=ok')\n"
                                   "except OSError as e: print('connect=' + errno.errorcode[e.errno])\n"
                                   "print('shm=' + str(os.path.exists('/dev/shm/" +
                                   name + "')))\n"});
  auto m = parse_results(r.stdout);
  EXPECT_EQ(m["connect"], "ECONNREFUSED") << r.stdout << r.stderr;
  EXPECT_EQ(m["shm"], "False");
  EXPECT_EQ(server.get().exit_code, 0);
}

}  // namespace
}  // namespace mayura::testing
