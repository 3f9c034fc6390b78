// mayura-run -it, driven as a person's terminal drives it: through a real
// pseudo-terminal that this test holds the master of, as `script` or tmux
// would, with mayura-run leading the session on its slave. Each test runs
// with an engine in mayura-run (--local) and through a mayurad, whose
// command the run attaches to over a WebSocket.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "harness.hpp"
#include "tests/support/pty_child.hpp"

namespace mayura::testing {
namespace {

using namespace std::chrono_literals;

// The settings a raw mode changes, as a terminal's user sees them.
bool same_settings(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_lflag == b.c_lflag && a.c_cflag == b.c_cflag &&
         a.c_cc[VMIN] == b.c_cc[VMIN] && a.c_cc[VINTR] == b.c_cc[VINTR];
}

enum class Via { local, daemon };

class MayuraRunTerminalTest : public NativeTest, public ::testing::WithParamInterface<Via> {
 protected:
  void SetUp() override {
    NativeTest::SetUp();
    // What the daemon leaves when it ends is reaped here, as systemd would.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    default_socket_dir_.emplace();
    if (GetParam() == Via::daemon) start_daemon();
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
    // SIGTERM, as systemctl stop sends it: the daemon releases every
    // sandbox and exits, before the leak check.
    if (daemon_ > 0) stop_mayurad(std::exchange(daemon_, -1), options());
    std::filesystem::remove(options().state_dir + "-mayurad.json");
    default_socket_dir_.reset();
    NativeTest::TearDown();
  }

  void start_daemon() {
    const NativeOptions& o = options();
    socket_ = o.state_dir + "-mayurad.sock";
    const std::string config = o.state_dir + "-mayurad.json";
    std::ofstream(config) << daemon_config(o, socket_, {{"maxLifetimeMs", 3600 * 1000}}).dump();
    daemon_ = start_mayurad(MAYURAD_PATH, config, true);
    ASSERT_TRUE(wait_until_served(socket_)) << "mayurad did not start on " << socket_;
  }

  // Starts `mayura-run ARGS` (shell words; --local, or through the test's
  // mayurad) on a new pty of `rows` by `columns`, in a session of its own
  // whose controlling terminal it is.
  void start(const std::string& args, int rows = 30, int columns = 100) {
    // A run before that did not end in time is ended now, not left behind.
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(std::exchange(child_, -1), nullptr, 0);
    }
    if (master_ >= 0) ::close(std::exchange(master_, -1));
    screen_.clear();
    const NativeOptions& o = options();
    const std::string command = "MAYURA_STATE_DIR=" + o.state_dir + " MAYURA_DISK_DIR=" + o.disk_dir +
                                " MAYURA_SNAPSHOT_DIR=" + o.snapshot_dir + " MAYURA_VOLUME_DIR=" + o.volume_dir +
                                " MAYURA_CGROUP_ROOT=" + o.cgroup_root +
                                " MAYURA_ID_BASE=" + std::to_string(o.id_base) +
                                " MAYURA_ID_SLOTS=" + std::to_string(o.id_slots) + " MAYURA_IMAGE_DIR=" + o.image_dir +
                                " MAYURA_IMAGE_STORE=" + o.image_store +
                                (daemon_ > 0 ? " MAYURA_HOST=unix://" + socket_ + " exec " MAYURA_RUN_PATH " "
                                             : " exec " MAYURA_RUN_PATH " --local ") +
                                args;
    const PtyChild child = start_on_pty({"/bin/sh", "-c", command}, rows, columns);
    master_ = child.master;
    child_ = child.pid;
    before_ = child.before;
    ASSERT_GE(master_, 0);
    ASSERT_GE(child_, 0);
  }

  void type(const std::string& keys) const {
    ASSERT_EQ(::write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  // A new window size: the kernel signals SIGWINCH to mayura-run, in the
  // terminal's foreground.
  void resize(int rows, int columns) const {
    winsize w{};
    w.ws_row = static_cast<unsigned short>(rows);
    w.ws_col = static_cast<unsigned short>(columns);
    ASSERT_EQ(::ioctl(master_, TIOCSWINSZ, &w), 0);
  }

  // Reads the screen until `text` is on it (anywhere since the start).
  bool shows(const std::string& text, std::chrono::milliseconds within = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (screen_.find(text) == std::string::npos) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return false;
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(master_, buffer, sizeof buffer);
      if (n <= 0) return false;  // EIO: the slave side is closed
      screen_.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }

  // mayura-run's exit status, once it has ended (-1 if it did not within a
  // minute, or ended on a signal).
  int exit_status() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(child_, &status, WNOHANG) == child_) {
        child_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      // Drains the screen, so a full one does not stop it; once the slave
      // is closed (the run is ending), only waits a little.
      if (!shows("\x01", 100ms)) std::this_thread::sleep_for(10ms);
    }
    return -1;
  }

  // Whether the terminal is as it was before mayura-run started.
  bool put_back() const {
    termios now{};
    return ::tcgetattr(master_, &now) == 0 && same_settings(now, before_);
  }

  bool becomes_raw() {
    for (int i = 0; i < 300 && !raw(); ++i) shows("\x01", 100ms);
    return raw();
  }

  bool raw() const {
    termios now{};
    return ::tcgetattr(master_, &now) == 0 && (now.c_lflag & (ICANON | ECHO | ISIG)) == 0;
  }

  pid_t daemon_ = -1;
  std::string socket_;
  // Local runs find no host's daemon at the default socket.
  std::optional<OwnDefaultSocketDir> default_socket_dir_;
  pid_t child_ = -1;
  int master_ = -1;
  termios before_{};
  std::string screen_;
};

INSTANTIATE_TEST_SUITE_P(Both, MayuraRunTerminalTest, ::testing::Values(Via::local, Via::daemon),
                         [](const auto& p) { return p.param == Via::local ? "Local" : "Daemon"; });

// ^C typed reaches the command's foreground job through its own terminal,
// and not mayura-run (whose terminal is raw): the shell's trap runs, the
// sleep ends, the shell goes on to its own exit status.
TEST_P(MayuraRunTerminalTest, CtrlCReachesTheCommandsForegroundJobAndNotTheRun) {
  start("-it -- sh -c 'trap \"echo caught-int\" INT; echo ready-$(tty); sleep 60; echo after-sleep; exit 7'");
  ASSERT_TRUE(shows("ready-/dev/pts/0")) << screen_;
  EXPECT_TRUE(raw());
  // A ^C that comes before the sleep has started reaches the shell alone (its
  // trap runs, and the sleep starts after): typed again until the sleep ends.
  bool ended = false;
  for (int i = 0; i < 20 && !ended; ++i) {
    type("\x03");
    ended = shows("after-sleep", 2s);
  }
  EXPECT_TRUE(ended) << screen_;
  EXPECT_NE(screen_.find("caught-int"), std::string::npos) << screen_;
  EXPECT_EQ(exit_status(), 7);
  EXPECT_TRUE(put_back());
}

// The command's terminal has the caller's size, and follows it: a resize
// of the caller's window is seen by stty inside (SIGWINCH, then the size).
TEST_P(MayuraRunTerminalTest, AResizeIsSeenByStty) {
  start(
      "-it -- sh -c 'trap \"echo resized-\\$(stty size | tr \\\" \\\" x)\" WINCH; "
      "echo size-$(stty size | tr \" \" x); while :; do sleep 0.1; done'",
      30, 100);
  ASSERT_TRUE(shows("size-30x100")) << screen_;
  resize(40, 120);
  EXPECT_TRUE(shows("resized-40x120")) << screen_;
  type("\x03");  // no trap for SIGINT: the shell ends on it
  EXPECT_EQ(exit_status(), 130);
  EXPECT_TRUE(put_back());
}

// What is typed reaches the command as it is typed; its terminal echoes it
// and turns the Enter key's \r into a line's end.
TEST_P(MayuraRunTerminalTest, TypedInputIsEchoedAndRead) {
  start("-it -- sh -c 'read first; echo got-$first; read second; echo got-$second'");
  ASSERT_TRUE(becomes_raw());  // typed before, the caller's own terminal would echo it too
  type("hello\r");
  ASSERT_TRUE(shows("got-hello")) << screen_;
  EXPECT_NE(screen_.find("hello\r\n"), std::string::npos) << screen_;  // the echo, with the terminal's line end
  type("world\r");
  EXPECT_TRUE(shows("got-world")) << screen_;
  EXPECT_EQ(exit_status(), 0);
  EXPECT_TRUE(put_back());
}

// The terminal is put back however the run ends: the command failing, the
// command not found, mayura-run stopped by SIGTERM mid-run (the sandbox
// released, 125), and bad input (never made raw).
TEST_P(MayuraRunTerminalTest, TheCallersTerminalIsPutBackOnEveryWayOut) {
  start("-it -- sh -c 'exit 3'");
  EXPECT_EQ(exit_status(), 3);
  EXPECT_TRUE(put_back());

  start("-it -- no-such-command-here");
  EXPECT_EQ(exit_status(), 127);
  EXPECT_TRUE(put_back());

  start("-it -- sh -c 'echo running; sleep 60'");
  ASSERT_TRUE(shows("running")) << screen_;
  EXPECT_TRUE(raw());
  ::kill(child_, SIGTERM);
  EXPECT_EQ(exit_status(), 125);
  EXPECT_TRUE(put_back());

  start("-it --json -- true");
  EXPECT_EQ(exit_status(), 125);
  EXPECT_NE(screen_.find("not with --json"), std::string::npos) << screen_;
  EXPECT_TRUE(put_back());
}

}  // namespace
}  // namespace mayura::testing
