// The desktop helper against a real Xvfb: each test starts its own server
// and the tests' X client (x_client.cpp), acts through mayura-desktop as the
// engine will, and checks what the client saw and what the screen shows.
// Every test ends with the server and client gone and nothing of the
// display left in /tmp.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "keys.hpp"
#include "mayura/errors.hpp"
#include "tests/support/png_image.hpp"

namespace mayura::desktop {
namespace {

using namespace std::chrono_literals;

// A program run to its end: exit code, stdout, stderr.
struct Ran {
  int code = -1;
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

// A child process, killed and reaped when it goes.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env, int keep_fd = -1) {
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> environment(env);
    for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
    std::vector<char*> envp;
    envp.reserve(environment.size() + 1);
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    posix_spawn_file_actions_adddup2(&actions, null, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, null, STDERR_FILENO);
    if (keep_fd < 0) posix_spawn_file_actions_adddup2(&actions, null, STDOUT_FILENO);
    if (::posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(null);
  }
  ~Child() { stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// A display of its own: Xvfb at WIDTHxHEIGHT on the first free display
// number (-displayfd), and the tests' client on it.
class DesktopTest : public ::testing::Test {
 protected:
  void SetUp() override { start(640, 480); }

  void start(int width, int height) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);  // not close-on-exec: Xvfb writes its display number to it
    const std::string screen = std::to_string(width) + "x" + std::to_string(height) + "x24";
    xvfb_ = std::make_unique<Child>(std::vector<std::string>{"Xvfb", "-displayfd", std::to_string(fds[1]), "-screen",
                                                             "0", screen, "-nolisten", "tcp"},
                                    std::vector<std::string>{}, fds[1]);
    ::close(fds[1]);
    std::string number;
    pollfd p{fds[0], POLLIN, 0};
    char c = 0;
    while (::poll(&p, 1, 20'000) == 1 && ::read(fds[0], &c, 1) == 1 && c != '\n') number += c;
    ::close(fds[0]);
    ASSERT_FALSE(number.empty()) << "Xvfb gave no display number";
    display_ = ":" + number;
    number_ = number;
    // What is ours: another test's server may take the number once ours is gone.
    struct stat st {};
    ASSERT_EQ(::stat(socket_path().c_str(), &st), 0) << socket_path();
    socket_ = {st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};

    log_ = ::testing::TempDir() + "x_client_" + std::to_string(::getpid()) + "_" + number + ".log";
    client_ = std::make_unique<Child>(std::vector<std::string>{X_CLIENT_PATH, log_},
                                      std::vector<std::string>{"DISPLAY=" + display_});
    ASSERT_TRUE(wait_for_log("ready ")) << read_file(log_);
  }

  void TearDown() override {
    client_.reset();
    xvfb_.reset();
    ::unlink(log_.c_str());
    if (number_.empty()) return;
    // (with -displayfd, Xvfb makes no lock file)
    struct stat st {};
    // (a file system may give the next socket the same inode at once)
    EXPECT_FALSE(::stat(socket_path().c_str(), &st) == 0 &&
                 std::tuple(st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec) == socket_)
        << "Xvfb's socket was left";
    number_.clear();
  }

  std::string socket_path() const { return "/tmp/.X11-unix/X" + number_; }

  // Runs mayura-desktop on this display.
  Ran helper(const std::vector<std::string>& args) {
    std::vector<std::string> argv{HELPER_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    raw.reserve(argv.size() + 1);
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    const std::string out = log_ + ".out", err = log_ + ".err";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::string display = "DISPLAY=" + display_;
    char* envp[] = {display.data(), nullptr};
    pid_t pid = -1;
    Ran ran;
    if (::posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), envp) == 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      ran.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    posix_spawn_file_actions_destroy(&actions);
    ran.out = read_file(out);
    ran.err = read_file(err);
    ::unlink(out.c_str());
    ::unlink(err.c_str());
    return ran;
  }

  // The client's log, once it holds `text` (or after 20 s, whatever it holds).
  bool wait_for_log(const std::string& text) {
    for (auto until = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < until;) {
      if (read_file(log_).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  // The log's lines that start with one of `kinds`, after the ready line.
  std::vector<std::string> events(const std::vector<std::string>& kinds) {
    std::vector<std::string> out;
    std::istringstream in(read_file(log_));
    for (std::string line; std::getline(in, line);) {
      for (const auto& k : kinds) {
        if (line.rfind(k + " ", 0) == 0) out.push_back(line);
      }
    }
    return out;
  }

  std::unique_ptr<Child> xvfb_, client_;
  std::string display_, number_, log_;
  std::tuple<ino_t, time_t, long> socket_{};  // its inode and when it was made
};

using mayura::testing::decode_png;
using Image = mayura::testing::PngImage;

std::string hex(std::uint32_t keysym) {
  std::ostringstream s;
  s << std::hex << keysym;
  return s.str();
}

TEST_F(DesktopTest, AScreenshotShowsThePaintedColoursWhereTheyWerePaintedAtTheScreensSize) {
  const Ran shot = helper({"screenshot"});
  ASSERT_EQ(shot.code, 0) << shot.err;
  const Image image = decode_png(shot.out);
  ASSERT_EQ(image.width, 640);
  ASSERT_EQ(image.height, 480);
  EXPECT_EQ(image.at(10, 10), 0xff0000u);
  EXPECT_EQ(image.at(109, 59), 0xff0000u);
  EXPECT_EQ(image.at(110, 59), 0xffffffu);
  EXPECT_EQ(image.at(225, 125), 0x00ff00u);
  EXPECT_EQ(image.at(639, 479), 0x0000ffu);
  EXPECT_EQ(image.at(599, 479), 0xffffffu);
  EXPECT_EQ(image.at(305, 305), 0x123456u);  // each channel where it belongs
  EXPECT_EQ(image.at(0, 0), 0xffffffu);
}

TEST_F(DesktopTest, ARegionScreenshotIsThatRegionAndARegionOffTheScreenIsBadInput) {
  const Ran shot = helper({"screenshot", "195", "95", "60", "60"});
  ASSERT_EQ(shot.code, 0) << shot.err;
  const Image image = decode_png(shot.out);
  ASSERT_EQ(image.width, 60);
  ASSERT_EQ(image.height, 60);
  EXPECT_EQ(image.at(0, 0), 0xffffffu);
  EXPECT_EQ(image.at(5, 5), 0x00ff00u);
  EXPECT_EQ(image.at(54, 54), 0x00ff00u);
  EXPECT_EQ(image.at(55, 55), 0xffffffu);
  for (const auto& region : std::vector<std::vector<std::string>>{
           {"600", "400", "41", "10"}, {"-1", "0", "10", "10"}, {"0", "0", "0", "10"}, {"0", "479", "1", "2"}}) {
    std::vector<std::string> args{"screenshot"};
    args.insert(args.end(), region.begin(), region.end());
    const Ran off = helper(args);
    EXPECT_EQ(off.code, 2) << region[0] << " " << region[1] << " " << region[2] << " " << region[3];
    EXPECT_NE(off.err.find("not on the screen"), std::string::npos) << off.err;
    EXPECT_EQ(off.out, "");
  }
}

TEST_F(DesktopTest, ClicksAndDoubleClicksArriveWhereAskedWithTheirButtonAndTheCursorFollows) {
  ASSERT_EQ(helper({"click", "50", "30", "1", "1"}).code, 0);
  ASSERT_EQ(helper({"click", "300", "200", "3", "2"}).code, 0);
  // the helper returns once the server has handled the events; the client
  // logs them as it reads them
  for (int i = 0; i < 2000 && events({"release"}).size() < 3; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(events({"press", "release"}),
            (std::vector<std::string>{"press 1 50 30", "release 1 50 30", "press 3 300 200", "release 3 300 200",
                                      "press 3 300 200", "release 3 300 200"}));
  EXPECT_EQ(helper({"cursor"}).out, "300 200\n");
  ASSERT_EQ(helper({"move", "639", "479"}).code, 0);
  EXPECT_EQ(helper({"cursor"}).out, "639 479\n");
  EXPECT_EQ(helper({"size"}).out, "640 480\n");
}

TEST_F(DesktopTest, ADragPassesEveryPointWithTheButtonHeld) {
  ASSERT_EQ(helper({"drag", "100", "100", "150", "120", "200", "140"}).code, 0);
  ASSERT_TRUE(wait_for_log("release 1 200 140"));
  const auto seen = events({"press", "release", "motion"});
  const std::vector<std::string> want{"motion 100 100 0", "press 1 100 100", "motion 150 120 100", "motion 200 140 100",
                                      "release 1 200 140"};
  EXPECT_EQ(seen, want);
}

TEST_F(DesktopTest, AScrollIsThatManyWheelStepsWhereAsked) {
  ASSERT_EQ(helper({"scroll", "320", "240", "5", "3"}).code, 0);
  ASSERT_EQ(helper({"scroll", "10", "20", "6", "1"}).code, 0);
  ASSERT_TRUE(wait_for_log("release 6 10 20"));
  EXPECT_EQ(events({"press"}),
            (std::vector<std::string>{"press 5 320 240", "press 5 320 240", "press 5 320 240", "press 6 10 20"}));
}

TEST_F(DesktopTest, TypedTextArrivesExactlyAsciiAndNot) {
  const std::string text = "Hello, World! <tab>\there\nwörld € ß ∀ 日本";
  std::vector<std::string> args{"type"};
  std::vector<std::string> want;
  for (const std::uint32_t k : text_keysyms(text)) {
    args.push_back(hex(k));
    want.push_back(hex(k));
  }
  const Ran typed = helper(args);
  ASSERT_EQ(typed.code, 0) << typed.err;
  ASSERT_TRUE(wait_for_log("keyup " + hex(text_keysyms("本")[0])));
  std::vector<std::string> got;
  for (const auto& line : events({"key"})) {
    std::istringstream in(line);
    std::string kind, plain, shifted;
    in >> kind >> plain >> shifted;
    if (plain != "ffe1") got.push_back(shifted);  // Shift itself is no character
  }
  EXPECT_EQ(got, want);
}

// The server is never reset, so keys given to characters the layout lacks
// stay given; once the layout's spare keys (some 20) are gone, later
// actions give those keys again.
TEST_F(DesktopTest, CharactersOnNoKeyKeepArrivingAfterTheSpareKeysAreAllGiven) {
  std::vector<std::string> want;
  for (std::uint32_t c = 0; c < 60; ++c) {
    const std::uint32_t keysym = 0x1004e00 + c;  // 一 and the CJK characters after it
    const Ran typed = helper({"type", hex(keysym)});
    ASSERT_EQ(typed.code, 0) << c << ": " << typed.err;
    // (an agent's pace: each arrives before the next is typed, so the client
    // reads each key's keysym before that key is given again)
    ASSERT_TRUE(wait_for_log("keyup " + hex(keysym))) << c;
    want.push_back(hex(keysym));
  }
  std::vector<std::string> got;
  for (const auto& line : events({"key"})) {
    std::istringstream in(line);
    std::string kind, plain, shifted;
    in >> kind >> plain >> shifted;
    got.push_back(shifted);
  }
  EXPECT_EQ(got, want);
}

TEST_F(DesktopTest, KeyCombosArriveWithTheirModifiersHeld) {
  std::vector<std::string> args{"key"};
  for (const auto& combo : combo_keysyms("ctrl+shift+t alt+Tab Return")) {
    std::string arg;
    for (const std::uint32_t k : combo) arg += (arg.empty() ? "" : ",") + hex(k);
    args.push_back(arg);
  }
  ASSERT_EQ(helper(args).code, 0);
  ASSERT_TRUE(wait_for_log("keyup ff0d"));
  const auto seen = events({"key"});
  ASSERT_EQ(seen.size(), 6u) << ::testing::PrintToString(seen);
  // Control_L, Shift_L, then t with Control (4) and Shift (1) held
  EXPECT_EQ(seen[0].substr(0, 9), "key ffe3 ");
  EXPECT_EQ(seen[1].substr(0, 9), "key ffe1 ");
  EXPECT_EQ(seen[2], "key 74 54 5");
  EXPECT_EQ(seen[3].substr(0, 9), "key ffe9 ");
  EXPECT_EQ(seen[4], "key ff09 ff09 8");  // Tab with Mod1 (Alt) held
  EXPECT_EQ(seen[5], "key ff0d ff0d 0");  // every modifier let go before Return
}

TEST_F(DesktopTest, PointsOutsideTheScreenAndMalformedRequestsAreBadInputAndSendNothing) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"move", "640", "0"},
                                                                {"move", "0", "480"},
                                                                {"click", "-1", "5", "1", "1"},
                                                                {"click", "5", "5", "4", "1"},
                                                                {"click", "5", "5", "1", "0"},
                                                                {"drag", "1", "1", "1", "999"},
                                                                {"scroll", "5", "5", "3", "1"},
                                                                {"scroll", "5", "5", "5", "0"},
                                                                {"type", "zz"},
                                                                {"type", "0"},
                                                                {"key", "ffe3,"},
                                                                {"move", "1x", "2"},
                                                                {"warp", "1", "2"}}) {
    const Ran r = helper(args);
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(args) << r.err;
    EXPECT_NE(r.err, "") << ::testing::PrintToString(args);
  }
  // a key typed after them all is logged once every event before it has been, so the look is not too early to
  // see what they sent
  ASSERT_EQ(helper({"type", "7a"}).code, 0);
  ASSERT_TRUE(wait_for_log("keyup 7a"));
  EXPECT_EQ(events({"press", "release", "motion", "key"}), std::vector<std::string>{"key 7a 7a 0"});
}

// Holds X display number `n` with no server on it: binds the abstract
// socket name a server must bind to take the number, and never listens, so
// a client's connection there is refused. -1 if a server has it.
int hold_display(int n) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "/tmp/.X11-unix/X" + std::to_string(n);
  name.copy(addr.sun_path + 1, sizeof addr.sun_path - 2);
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), size) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_F(DesktopTest, WithTheServerKilledEveryActionFailsSayingSo) {
  ASSERT_NE(xvfb_->pid(), -1);
  xvfb_.reset();
  // Another test's server may take the number once ours is gone (ctest runs
  // the desktop tests side by side): it is held at once, so that no server
  // can answer there; should one have taken it already, the next free
  // number is held instead.
  int held = -1;
  for (int n = std::stoi(number_); held < 0 && n < std::stoi(number_) + 64; ++n) {
    held = hold_display(n);
    if (held >= 0) display_ = ":" + std::to_string(n);
  }
  ASSERT_GE(held, 0) << "no display number could be held";
  for (const auto& args : std::vector<std::vector<std::string>>{{"screenshot"}, {"click", "1", "1", "1", "1"}}) {
    const Ran r = helper(args);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("no X server answers on display " + display_), std::string::npos) << r.err;
  }
  ::close(held);
}

TEST_F(DesktopTest, TheLargestScreenIsCapturedWhole) {
  TearDown();
  start(3840, 2160);
  const Ran shot = helper({"screenshot"});
  ASSERT_EQ(shot.code, 0) << shot.err;
  const Image image = decode_png(shot.out);
  EXPECT_EQ(image.width, 3840);
  EXPECT_EQ(image.height, 2160);
  EXPECT_EQ(image.at(10, 10), 0xff0000u);
  EXPECT_EQ(image.at(3839, 2159), 0xffffffu);
}

// The engine's side: names and text to keysyms, checked before the helper
// runs.
TEST(DesktopKeys, CombosInXdotoolsSyntax) {
  using V = std::vector<std::vector<std::uint32_t>>;
  EXPECT_EQ(combo_keysyms("ctrl+s"), (V{{0xffe3, 0x73}}));
  EXPECT_EQ(combo_keysyms("Return"), (V{{0xff0d}}));
  EXPECT_EQ(combo_keysyms("alt+Tab"), (V{{0xffe9, 0xff09}}));
  EXPECT_EQ(combo_keysyms("ctrl+shift+t"), (V{{0xffe3, 0xffe1, 0x74}}));
  EXPECT_EQ(combo_keysyms("super+l"), (V{{0xffeb, 0x6c}}));
  EXPECT_EQ(combo_keysyms("KP_Enter"), (V{{0xff8d}}));
  EXPECT_EQ(combo_keysyms("return"), (V{{0xff0d}}));  // a name in another case, as xdotool takes it
  EXPECT_EQ(combo_keysyms("  ctrl+a   Delete "), (V{{0xffe3, 0x61}, {0xffff}}));
  EXPECT_EQ(combo_keysyms("F12"), (V{{0xffc9}}));
}

TEST(DesktopKeys, UnknownAndEmptyKeysAreInvalidInput) {
  for (const char* bad : {"", "   ", "ctrl+", "+a", "ctrl++a", "NoSuchKey", "ctrl+Nope"}) {
    try {
      combo_keysyms(bad);
      ADD_FAILURE() << "'" << bad << "' was taken";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << bad;
    }
  }
  std::string many;
  for (std::size_t i = 0; i <= kMaxKeyCombos; ++i) many += "a ";
  EXPECT_THROW(combo_keysyms(many), SandboxError);
}

TEST(DesktopKeys, TextBecomesTheKeysymsThatTypeIt) {
  using V = std::vector<std::uint32_t>;
  EXPECT_EQ(text_keysyms("aZ 1"), (V{0x61, 0x5a, 0x20, 0x31}));
  EXPECT_EQ(text_keysyms("a\nb\t"), (V{0x61, 0xff0d, 0x62, 0xff09}));
  EXPECT_EQ(text_keysyms("é€"), (V{0xe9, 0x20ac}));
  EXPECT_EQ(text_keysyms("日"), (V{0x10065e5}));  // no legacy keysym: Unicode's
  EXPECT_EQ(text_keysyms(std::string(kMaxTypeChars, 'x')).size(), kMaxTypeChars);
}

TEST(DesktopKeys, TextThatIsEmptyNotUtf8HoldsControlsOrIsTooLongIsInvalidInput) {
  const std::vector<std::string> bad{"",
                                     "\xff",
                                     "caf\xe9",
                                     "\xc0\xaf",
                                     "\xed\xa0\x80",
                                     "\xe2\x82",
                                     "bell\x07",
                                     "\x7f",
                                     std::string(kMaxTypeChars + 1, 'x'),
                                     std::string("nul\0x", 5)};
  for (const auto& text : bad) {
    try {
      text_keysyms(text);
      ADD_FAILURE() << "'" << text << "' was taken";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << e.what();
    }
  }
}

}  // namespace
}  // namespace mayura::desktop
