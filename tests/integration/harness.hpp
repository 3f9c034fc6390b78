#pragma once
// The integration tests' fixture: a native provider of the test's own (its
// own state directory, cgroup root and host id range, so tests run in
// parallel), and a check at the end of every test that nothing leaked.

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/native.hpp"
#include "mayura/sandbox.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura::testing {

// A native provider's options no other test process shares.
NativeOptions isolated_options();

// What a leak check compares against.
struct HostSnapshot {
  std::vector<std::string> mounts;
  // The network namespaces this process holds open (fds to nsfs): the
  // engine's made-ahead and sandbox namespaces must all be gone.
  std::vector<std::string> network_namespaces;
  static HostSnapshot take();
};

// The files under `dir` a loop device is bound to (the engine's own scan).
std::vector<std::string> loop_devices_bound_under(const std::string& dir);

// Every way a test can leak: processes in the id range, cgroups, records,
// host mounts. Adds a test failure for each.
void expect_nothing_leaked(const NativeOptions& options, const HostSnapshot& before);
// Kills and removes what test processes that are gone left (their cgroups
// on every hierarchy, their state directories): /run/mayura-test-PID names
// them.
void remove_what_dead_tests_left();

// TCP sockets listening in the test process's network namespace.
int listening_sockets();

// Runs `work` in a forked child as uid and gid `uid` (no supplementary
// groups), so that the test's own credentials stay; what it writes to `out`
// comes back. None if the child could not take the ids or did not end with
// 0. (Forked from a process with threads: `work` should make system calls,
// and allocate little.)
std::optional<std::string> output_as(uid_t uid, const std::function<void(int out)>& work);
// All of `bytes` to `fd`, as far as it takes them.
void write_to(int fd, std::string_view bytes);

// What a connection to 127.0.0.1:port made as `uid` reads: the answer to an
// HTTP GET of /index.html, or "refused" when connect fails with
// ECONNREFUSED.
std::string fetch_as(uid_t uid, int port);

// A TCP socket listening on 0.0.0.0:port of the calling thread's namespace
// (every address the "host" has); closed when it goes.
class HostListener {
 public:
  explicit HostListener(int port);
  ~HostListener();
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;
  // The connections that reached it since the last call (each one the
  // kernel completed waits in its queue until taken).
  int take();

 private:
  int fd_;
};

// Network links of the calling thread's namespace whose name starts so.
std::vector<std::string> links_named(const std::string& prefix);

// Host pids whose real uid lies in the options' id range.
std::vector<pid_t> processes_in_range(const NativeOptions& options);

// Those of them that can still run code of their own: neither exited nor
// with a SIGKILL pending.
std::vector<pid_t> processes_able_to_run(const NativeOptions& options);

// Waits until `done` holds, up to `bound`; whether it did.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds bound = std::chrono::seconds(10));

class NativeTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Changes options before the first sandbox.
  NativeOptions& options() { return options_; }
  Sandboxes& sandboxes();
  Sandbox create(CreateOptions create = {});
  // Runs `sh -c script` and expects exit 0; returns stdout.
  std::string sh(const Sandbox& sandbox, const std::string& script, const ExecOptions& options = {});
  // Ends the provider (and with it every sandbox) before the leak check.
  void shutdown();

  SandboxesOptions limits_;

 private:
  NativeOptions options_;
  HostSnapshot before_;
  std::optional<Sandboxes> sandboxes_;
};

// Moves the calling thread (and every thread it starts later, the engine's
// among them) into a new network namespace with loopback up, so that what a
// test listens on or sends stays in a namespace it made.
void enter_own_network_namespace();

// Gives the calling thread, and every program it starts from then on, a
// /run/mayura of its own: an empty tmpfs, in a mount namespace of its own
// that host mounts still propagate into. So a mayurad serving this host's
// default socket (a packaged one, a developer's) is never what a test's
// mayura-run finds, and a test that wants the default socket serves it
// itself. The thread returns to its own mount namespace when this goes.
class OwnDefaultSocketDir {
 public:
  OwnDefaultSocketDir();
  ~OwnDefaultSocketDir();
  OwnDefaultSocketDir(const OwnDefaultSocketDir&) = delete;
  OwnDefaultSocketDir& operator=(const OwnDefaultSocketDir&) = delete;

 private:
  int host_namespace_ = -1;
  int users_ = -1;  // the lock the test processes that use /run/mayura hold shared
};

// The cgroup layout the test machine was made with: the VMs of tests/vm say
// it in MAYURA_TEST_LAYOUT (v2-root, v2-delegated, v2-login, v1, hybrid);
// elsewhere it is read from the host (this project's development and CI
// machines are hybrid).
std::string test_layout();

// A mayurad config with the options' places (state directory, cgroup root,
// id range, image directory and store) and no sandbox or network namespace
// made ahead, serving `socket`; the settings in `extra` over it.
nlohmann::json daemon_config(const NativeOptions& options, const std::string& socket,
                             const nlohmann::json& extra = nlohmann::json::object());

// Starts mayurad (`program`) with `config` as a child that gets SIGTERM (and so releases
// every sandbox) when the test process dies, even by the SIGKILL of a ctest
// timeout; its stderr goes to /dev/null when `quiet`.
pid_t start_mayurad(const std::string& program, const std::string& config, bool quiet);

// SIGTERM to a mayurad start_mayurad started, as systemctl stop sends it: it
// must release every sandbox and exit 0 (a test failure otherwise). Then
// what it left is reaped here, the test being its subreaper, until no
// process of the options' id range is left (a bounded while).
void stop_mayurad(pid_t pid, const NativeOptions& options);

// Waits until a Unix socket at `path` takes a connection (a daemon serves
// it), up to `bound`; whether it did.
bool wait_until_served(const std::string& path, std::chrono::milliseconds bound = std::chrono::seconds(10));

// Runs a shell command line; its stdout.
std::string run_shell(const std::string& command);

// A self-signed certificate for 127.0.0.1 and localhost, made with the
// openssl CLI: DIR/NAME.pem and its key DIR/NAME.key. A failure names what
// openssl said (a test failure).
void make_certificate(const std::string& dir, const std::string& name);

// A host file's whole contents ("" if unreadable).
std::string read_host(const std::string& path);

// How many descriptors this process has open.
int open_fds();
// The open-file limit under which exactly `room` more descriptors can be
// opened: the lowest free numbers count, since a process's descriptors have
// holes, and a limit of open_fds() + room may leave more than room.
rlim_t fd_limit_leaving(int room);

// A directory holding a tiny root file system: /bin/sh and the libraries it
// needs, copied from the host, plus the files named in `extra`.
std::string make_tiny_image(const std::string& parent, const std::vector<std::string>& extra = {});

}  // namespace mayura::testing
