// The desktop of a native sandbox, for real: Xvfb from the host image in
// the sandbox, the tests' own X client (tests/desktop/x_client.cpp) painting
// and recording inside it, and every action through the Sandbox handle.
// Each test ends with the leak check, which finds any X server left (a
// process of the sandbox's ids).

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <boost/asio/use_future.hpp>

#include "sandbox/tool_json.hpp"
#include "tests/support/png_image.hpp"
#include "tests/support/reason_of.hpp"
#include "harness.hpp"
#include "http_client.hpp"
#include "image_archives.hpp"
#include "mayura/images.hpp"
#include "mayura/remote.hpp"
#include "mayura/tools.hpp"

namespace mayura::testing {
namespace {

using namespace std::chrono_literals;

std::string host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

CreateOptions with_desktop(int width = 640, int height = 480) {
  CreateOptions o;
  o.desktop = DesktopSize{width, height};
  return o;
}

// The client's log once it holds `text` (or, after 30 s, whatever it holds).
std::string log_with(const Sandbox& sandbox, const std::string& text, const std::string& path = "/workspace/log") {
  std::string log;
  for (auto until = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < until;) {
    try {
      log = sandbox.read_file(path);
    } catch (const SandboxError&) {
      log.clear();  // not made yet
    }
    if (log.find(text) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  return log;
}

// The log's lines of these kinds.
std::vector<std::string> events(const std::string& log, const std::vector<std::string>& kinds) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    for (const auto& k : kinds) {
      if (line.rfind(k + " ", 0) == 0) out.push_back(line);
    }
  }
  return out;
}

// How many of the sockets in these /proc/net/tcp tables listen (st 0A).
int tcp_listeners(const std::string& tables) {
  std::istringstream in(tables);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string sl, local, remote, st;
    fields >> sl >> local >> remote >> st;
    n += st == "0A" ? 1 : 0;
  }
  return n;
}

class DesktopTest : public NativeTest {
 protected:
  // The tests' X client, started in the sandbox in the background; its log
  // says when its window is painted and it listens.
  void start_client(const Sandbox& sandbox, const std::string& mode = "") {
    sandbox.write_file("/workspace/x_client", host_file(X_CLIENT_PATH));
    sh(sandbox, "chmod 755 /workspace/x_client && (/workspace/x_client /workspace/log " + mode + " >/dev/null 2>&1 &)");
  }
};

TEST_F(DesktopTest, EveryCommandSeesTheDisplayAndTheXServerIsTheSandboxUsersWithNoTcp) {
  auto sandbox = create(with_desktop());
  EXPECT_EQ(sh(sandbox, "echo $DISPLAY"), ":0\n");
  // the X server: the sandbox user's, in the sandbox's cgroup, on no TCP port
  const std::string server = sh(sandbox,
                                "for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = Xvfb ] && "
                                "{ stat -c %u $p; cat $p/cgroup; }; done; true");
  EXPECT_EQ(server.substr(0, server.find('\n') + 1), sh(sandbox, "id -u")) << server;
  // its own command cgroup (named so on cgroup2; v1 hierarchies show the commands' parent)
  EXPECT_NE(server.find("/commands"), std::string::npos) << server;
  // (sh fails the test if cat cannot read a table; and the same look, run while a listener of its own is up,
  // counts it, so a look that sees no table's lines would not pass)
  const std::string tables = "cat /proc/net/tcp /proc/net/tcp6";
  EXPECT_EQ(tcp_listeners(sh(sandbox, tables)), 0);
  EXPECT_EQ(tcp_listeners(sh(sandbox,
                             "python3 -c 'import socket, subprocess; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
                             "s.listen(); subprocess.run(\"" +
                                 tables + "\", shell=True, check=True)'")),
            1);
  EXPECT_EQ(sh(sandbox, "ls -A /tmp/.X11-unix"), "X0\n");
  EXPECT_TRUE(sandbox.features().desktop);
}

TEST_F(DesktopTest, AScreenshotShowsWhatAClientPaintedWhereItPaintedItAtTheSizeAsked) {
  auto sandbox = create(with_desktop());
  start_client(sandbox);
  ASSERT_NE(log_with(sandbox, "ready 640 480").find("ready"), std::string::npos);
  const PngImage image = decode_png(sandbox.screenshot());
  ASSERT_EQ(image.width, 640);
  ASSERT_EQ(image.height, 480);
  EXPECT_EQ(image.at(10, 10), 0xff0000u);
  EXPECT_EQ(image.at(109, 59), 0xff0000u);
  EXPECT_EQ(image.at(110, 60), 0xffffffu);
  EXPECT_EQ(image.at(225, 125), 0x00ff00u);
  EXPECT_EQ(image.at(639, 479), 0x0000ffu);
  EXPECT_EQ(image.at(305, 305), 0x123456u);
  ScreenshotOptions region;
  region.region = Region{195, 95, 60, 60};
  const PngImage part = decode_png(sandbox.screenshot(region));
  ASSERT_EQ(part.width, 60);
  ASSERT_EQ(part.height, 60);
  EXPECT_EQ(part.at(0, 0), 0xffffffu);
  EXPECT_EQ(part.at(5, 5), 0x00ff00u);
}

TEST_F(DesktopTest, ClicksDragsScrollsAndTheCursorArriveAsAsked) {
  auto sandbox = create(with_desktop());
  start_client(sandbox);
  ASSERT_NE(log_with(sandbox, "ready").find("ready"), std::string::npos);
  sandbox.click({50, 30});
  sandbox.click({300, 200}, MouseButton::right, 2);
  sandbox.drag({{100, 100}, {150, 120}, {200, 140}});
  sandbox.scroll({320, 240}, ScrollDirection::down, 3);
  sandbox.scroll({10, 20}, ScrollDirection::left);
  sandbox.move({639, 479});
  EXPECT_EQ(sandbox.cursor_position(), (Point{639, 479}));
  const std::string log = log_with(sandbox, "release 6 10 20");
  EXPECT_EQ(events(log, {"press", "release"}),
            (std::vector<std::string>{"press 1 50 30", "release 1 50 30", "press 3 300 200", "release 3 300 200",
                                      "press 3 300 200", "release 3 300 200", "press 1 100 100", "release 1 200 140",
                                      "press 5 320 240", "release 5 320 240", "press 5 320 240", "release 5 320 240",
                                      "press 5 320 240", "release 5 320 240", "press 6 10 20", "release 6 10 20"}));
  // the drag's points, with button 1 held (state 0x100)
  const auto motion = events(log, {"motion"});
  EXPECT_NE(std::find(motion.begin(), motion.end(), "motion 150 120 100"), motion.end()) << log;
  EXPECT_NE(std::find(motion.begin(), motion.end(), "motion 200 140 100"), motion.end()) << log;
}

TEST_F(DesktopTest, TypedTextAndKeyCombosArriveExactly) {
  auto sandbox = create(with_desktop());
  start_client(sandbox);
  ASSERT_NE(log_with(sandbox, "ready").find("ready"), std::string::npos);
  sandbox.type("Hi, wörld € 日\n");
  sandbox.key("ctrl+shift+t alt+Tab");
  const std::string log = log_with(sandbox, "keyup ff09");
  std::vector<std::string> typed;
  for (const auto& line : events(log, {"key"})) {
    std::istringstream in(line);
    std::string kind, plain, shifted, state;
    in >> kind >> plain >> shifted >> state;
    typed.push_back(plain == "ffe1" ? "" : shifted);
  }
  std::erase(typed, "");
  // H i , space w ö r l d space € space 日 Return, then Control_L t Alt_L Tab
  EXPECT_EQ(typed, (std::vector<std::string>{"48", "69", "2c", "20", "77", "f6", "72", "6c", "64", "20", "20ac", "20",
                                             "10065e5", "ff0d", "ffe3", "54", "ffe9", "ff09"}))
      << log;
  EXPECT_NE(log.find("key 74 54 5\n"), std::string::npos) << log;      // t with Control and Shift held
  EXPECT_NE(log.find("key ff09 ff09 8\n"), std::string::npos) << log;  // Tab with Alt held
}

TEST_F(DesktopTest, BadActionsAreInvalidInputBeforeAnythingRuns) {
  auto sandbox = create(with_desktop());
  start_client(sandbox);
  ASSERT_NE(log_with(sandbox, "ready").find("ready"), std::string::npos);
  std::string message;
  EXPECT_EQ(reason_of([&] { sandbox.click({640, 0}); }, &message), Reason::INVALID_INPUT);
  EXPECT_NE(message.find("outside the screen"), std::string::npos) << message;
  EXPECT_EQ(reason_of([&] { sandbox.move({-1, 5}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.click({5, 5}, MouseButton::left, 4); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.drag({{1, 1}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.scroll({1, 1}, ScrollDirection::up, 0); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.type(""); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.type("caf\xe9"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.type(std::string(kMaxDesktopTextBytes + 1, 'x')); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.key(""); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sandbox.key("ctrl+NoSuchKey"); }, &message), Reason::INVALID_INPUT);
  EXPECT_NE(message.find("NoSuchKey"), std::string::npos) << message;
  ScreenshotOptions off;
  off.region = Region{600, 400, 41, 10};
  EXPECT_EQ(reason_of([&] { sandbox.screenshot(off); }), Reason::INVALID_INPUT);
  // nothing reached the client: a key typed after them all is logged once every event before it has been, so
  // the look is not too early to see what they sent
  sandbox.type("z");
  EXPECT_EQ(events(log_with(sandbox, "keyup 7a"), {"press", "release", "motion", "key"}),
            std::vector<std::string>{"key 7a 7a 0"});
  // a sandbox without a desktop, and a screen of no allowed size
  auto plain = create();
  EXPECT_EQ(reason_of([&] { plain.screenshot(); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { create(with_desktop(10, 10)); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { create(with_desktop(kMaxDesktopWidth + 1, 600)); }), Reason::INVALID_INPUT);
}

TEST_F(DesktopTest, AnImageWithoutXvfbIsInvalidConfigAndLeavesNothing) {
  CreateOptions o = with_desktop();
  o.image = make_tiny_image(options().image_dir + "/tiny", {"/bin/cat"});
  std::string message;
  EXPECT_EQ(reason_of([&] { create(o); }, &message), Reason::INVALID_CONFIG);
  EXPECT_NE(message.find("Xvfb"), std::string::npos) << message;
  EXPECT_EQ(sandboxes().size(), 0u);
}

TEST_F(DesktopTest, TheXServerKilledByACommandFailsActionsClearlyAndTheSandboxLivesOn) {
  auto sandbox = create(with_desktop());
  sh(sandbox, "for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = Xvfb ] && kill -9 ${p#/proc/}; done; sleep 0.2");
  std::string message;
  EXPECT_EQ(reason_of([&] { sandbox.screenshot(); }, &message), Reason::INTERNAL);
  EXPECT_NE(message.find("X server is not running"), std::string::npos) << message;
  EXPECT_EQ(reason_of([&] { sandbox.click({1, 1}); }), Reason::INTERNAL);
  EXPECT_EQ(sh(sandbox, "echo alive"), "alive\n");
}

TEST_F(DesktopTest, AGrabbedServerTimesActionsOutAndAnswersOnceLetGo) {
  auto sandbox = create(with_desktop());
  start_client(sandbox, "grab");
  ASSERT_NE(log_with(sandbox, "grabbed").find("grabbed"), std::string::npos);
  std::string message;
  EXPECT_EQ(reason_of([&] { sandbox.screenshot(); }, &message), Reason::INTERNAL);
  EXPECT_NE(message.find("did not answer"), std::string::npos) << message;
  sh(sandbox, "for p in /proc/[0-9]*; do [ \"$(cat $p/comm)\" = x_client ] && kill ${p#/proc/}; done; true");
  EXPECT_EQ(decode_png(sandbox.screenshot()).width, 640);
}

TEST_F(DesktopTest, TheLargestScreenIsCapturedWhole) {
  auto sandbox = create(with_desktop(kMaxDesktopWidth, kMaxDesktopHeight));
  const PngImage image = decode_png(sandbox.screenshot());
  EXPECT_EQ(image.width, kMaxDesktopWidth);
  EXPECT_EQ(image.height, kMaxDesktopHeight);
}

// X listens on a path in the sandbox's own /tmp and on an abstract socket
// in its own network namespace: another sandbox, with a desktop of its own
// or none, reaches neither; nor does a process of the host in another
// network namespace.
TEST_F(DesktopTest, NoOtherSandboxNorTheHostReachesTheDisplay) {
  enter_own_network_namespace();
  auto a = create(with_desktop());
  start_client(a);
  ASSERT_NE(log_with(a, "ready").find("ready"), std::string::npos);
  const char* probe =
      "import socket\n"
      "for addr in ('\\0/tmp/.X11-unix/X0', '/tmp/.X11-unix/X0'):\n"
      "    s = socket.socket(socket.AF_UNIX)\n"
      "    try:\n"
      "        s.connect(addr); print('reached')\n"
      "    except OSError as e:\n"
      "        print(type(e).__name__)\n";
  auto none = create();
  EXPECT_EQ(none.exec({"python3", "-c", probe}).stdout, "ConnectionRefusedError\nFileNotFoundError\n");
  // b's display is its own: a's window is not on it
  auto b = create(with_desktop());
  EXPECT_NE(decode_png(b.screenshot()).at(10, 10), 0xff0000u);
  EXPECT_EQ(decode_png(a.screenshot()).at(10, 10), 0xff0000u);
  // the host, from a network namespace of its own
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string abstract("\0/tmp/.X11-unix/X0", 18);
  std::copy(abstract.begin(), abstract.end(), addr.sun_path);
  const int connected = ::connect(s, reinterpret_cast<const sockaddr*>(&addr),
                                  static_cast<socklen_t>(sizeof(sa_family_t) + abstract.size()));
  EXPECT_NE(connected, 0);
  ::close(s);
}

TEST_F(DesktopTest, TheAsyncFormsDoTheSame) {
  auto sandbox = create(with_desktop());
  start_client(sandbox);
  ASSERT_NE(log_with(sandbox, "ready").find("ready"), std::string::npos);
  const std::string png = sandbox.async_screenshot(ScreenshotOptions{}, boost::asio::use_future).get();
  EXPECT_EQ(decode_png(png).at(10, 10), 0xff0000u);
  sandbox.async_click(Point{20, 20}, MouseButton::left, 1, boost::asio::use_future).get();
  sandbox.async_type("ok", boost::asio::use_future).get();
  EXPECT_EQ(sandbox.async_cursor_position(boost::asio::use_future).get(), (Point{20, 20}));
  const std::string log = log_with(sandbox, "keyup 6b");
  EXPECT_NE(log.find("press 1 20 20"), std::string::npos) << log;
  EXPECT_NE(log.find("key 6f 6f"), std::string::npos) << log;
}

// An image from an archive, imported into the store, that carries Xvfb
// (the host's, with its libraries and keymaps, over the tests' BusyBox
// image): the same desktop, as the image's own user.
TEST_F(DesktopTest, AnImportedImageThatCarriesXvfbHasADesktop) {
  namespace img = images;
  img::ImageSpec spec = img::busybox_spec(img::Compression::gzip);
  spec.layers.push_back(img::host_files_layer({{"/usr/bin/Xvfb", "/usr/bin/Xvfb"},
                                               {"/usr/bin/xkbcomp", "/usr/bin/xkbcomp"},
                                               {X_CLIENT_PATH, "/usr/local/bin/x_client"}},
                                              {"/usr/share/X11/xkb"}));
  const std::string archive = options().state_dir + "-xvfb.tar";
  img::write_oci_archive(archive, spec, "xvfb:1");
  ImageStore(options().image_store).import_archive(archive);
  std::filesystem::remove(archive);

  CreateOptions c = with_desktop(320, 200);
  c.image = "xvfb:1";
  auto sandbox = create(c);
  EXPECT_EQ(sh(sandbox, "id -u; echo $DISPLAY"), "1234\n:0\n");
  sh(sandbox, "(/usr/local/bin/x_client /app/log >/dev/null 2>&1 &)");
  ASSERT_NE(log_with(sandbox, "ready 320 200", "/app/log").find("ready"), std::string::npos);
  const PngImage image = decode_png(sandbox.screenshot());
  EXPECT_EQ(image.width, 320);
  EXPECT_EQ(image.at(10, 10), 0xff0000u);
  EXPECT_EQ(image.at(225, 125), 0x00ff00u);
  sandbox.click({40, 30});
  sandbox.type("x");
  const std::string log = log_with(sandbox, "keyup 78", "/app/log");
  EXPECT_NE(log.find("press 1 40 30"), std::string::npos) << log;
  EXPECT_NE(log.find("key 78 "), std::string::npos) << log;
}

// What a computer-use model gets: the tools, whose screenshot is an image
// block with the real pixels and whose input reaches the client.
TEST_F(DesktopTest, TheToolsGiveAModelTheScreenAndItsInput) {
  auto sandbox = create(with_desktop());
  start_client(sandbox);
  ASSERT_NE(log_with(sandbox, "ready").find("ready"), std::string::npos);
  SandboxToolsOptions o;
  o.name = "screen";
  o.read = false;
  o.desktop = true;
  const auto tools = sandbox_tools(sandbox, o);
  RunContext run;
  for (const std::string action : {"screenshot", "click", "type", "key", "cursor"}) {
    run.permissions.insert("tool:screen." + action);
    run.permissions.insert("sandbox:screen:" + action);
  }
  run.permissions.insert("effect:read");
  run.permissions.insert("effect:write");
  const auto call = [&](const std::string& action, const nlohmann::json& input) {
    for (const auto& t : tools) {
      if (t.definition.id == "screen." + action) return t.call(input, run);
    }
    throw std::runtime_error("no tool " + action);
  };
  const nlohmann::json image = call("screenshot", nlohmann::json::object());
  ASSERT_EQ(image["source"]["media_type"], "image/png");
  const PngImage screen = decode_png(tool_json::unbase64(image["source"]["data"].get<std::string>()));
  EXPECT_EQ(screen.width, 640);
  EXPECT_EQ(screen.at(10, 10), 0xff0000u);
  EXPECT_EQ(screen.at(305, 305), 0x123456u);
  call("click", {{"x", 60}, {"y", 40}, {"button", "middle"}});
  call("type", {{"text", "é"}});
  call("key", {{"keys", "ctrl+Return"}});
  EXPECT_EQ(call("cursor", nlohmann::json::object()), (nlohmann::json{{"x", 60}, {"y", 40}}));
  const std::string log = log_with(sandbox, "keyup ff0d");
  EXPECT_NE(log.find("press 2 60 40"), std::string::npos) << log;
  EXPECT_NE(log.find(" e9"), std::string::npos) << log;
  EXPECT_NE(log.find("key ff0d ff0d 4\n"), std::string::npos) << log;  // Return with Control held
}

// The same desktop through mayurad: its resources on a real socket, and
// the remote provider over them.
TEST_F(DesktopTest, ThroughMayuradTheSameActionsAndScreenshotsAsPng) {
  char dir[] = "/tmp/mayura-desktop-service-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string socket = std::string(dir) + "/mayurad.sock";
  // The real daemon, started from its config file with the test's places.
  const std::string config = std::string(dir) + "/mayurad.json";
  std::ofstream(config) << daemon_config(options(), socket,
                                         {{"maxSandboxes", 2}, {"maxLifetimeMs", 600'000}, {"socketMode", "0600"}})
                               .dump();
  struct Daemon {
    pid_t pid;
    ~Daemon() {
      if (pid <= 0) return;  // (an assertion that returned early leaves it running)
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  } daemon{start_mayurad(MAYURAD_PATH, config, false)};
  ASSERT_TRUE(wait_until_served(socket));
  {
    RemoteOptions remote_options;
    remote_options.url = "unix://" + socket;
    Sandboxes remote = create_sandboxes(remote_sandboxes(remote_options), {});
    EXPECT_TRUE(remote.features().desktop);
    CreateOptions c = with_desktop(320, 200);
    c.lifetime_ms = 120'000;
    const Sandbox sandbox = remote.create(c);
    start_client(sandbox);
    ASSERT_NE(log_with(sandbox, "ready 320 200").find("ready"), std::string::npos);
    const PngImage image = decode_png(sandbox.screenshot());
    EXPECT_EQ(image.width, 320);
    EXPECT_EQ(image.at(10, 10), 0xff0000u);
    ScreenshotOptions region;
    region.region = Region{200, 100, 10, 10};
    EXPECT_EQ(decode_png(sandbox.screenshot(region)).at(0, 0), 0x00ff00u);
    sandbox.click({30, 20}, MouseButton::right);
    sandbox.drag({{5, 5}, {6, 7}});
    sandbox.scroll({8, 9}, ScrollDirection::up, 2);
    sandbox.type("a");
    sandbox.key("shift+b");
    sandbox.move({319, 199});
    EXPECT_EQ(sandbox.cursor_position(), (Point{319, 199}));
    const std::string log = log_with(sandbox, "keyup 62");
    EXPECT_EQ(events(log, {"press", "release"}),
              (std::vector<std::string>{"press 3 30 20", "release 3 30 20", "press 1 5 5", "release 1 6 7",
                                        "press 4 8 9", "release 4 8 9", "press 4 8 9", "release 4 8 9"}))
        << log;
    EXPECT_NE(log.find("key 62 42 1\n"), std::string::npos) << log;  // b with Shift held
    // bad input is refused by the daemon's limits layer too, and a client
    // that skips its own checks gets 400 from the resource itself
    EXPECT_EQ(reason_of([&] { sandbox.click({320, 0}); }), Reason::INVALID_INPUT);
    service::HttpCall raw;
    raw.method = boost::beast::http::verb::get;
    raw.target = "/v1/sandboxes";
    // (the daemon's id for it: the handle's is the client's own)
    const auto listed = nlohmann::json::parse(service::http_call(service::parse_endpoint(socket), raw).body);
    ASSERT_EQ(listed.at("sandboxes").size(), 1u);
    const std::string id = listed["sandboxes"][0]["id"];
    EXPECT_EQ(listed["sandboxes"][0]["desktop"], (nlohmann::json{{"width", 320}, {"height", 200}}));
    raw.method = boost::beast::http::verb::post;
    raw.target = "/v1/sandboxes/" + id + "/desktop/input";
    raw.body = R"({"action": "click", "at": {"x": 320, "y": 0}})";
    raw.content_type = "application/json";
    EXPECT_EQ(service::http_call(service::parse_endpoint(socket), raw).status, 400u);
    raw.body = R"({"action": "click", "at": {"x": 1, "y": 1}, "button": "fourth"})";
    EXPECT_EQ(service::http_call(service::parse_endpoint(socket), raw).status, 400u);
    raw.method = boost::beast::http::verb::get;
    raw.body.clear();
    raw.target = "/v1/sandboxes/" + id + "/desktop/screenshot";
    const auto png = service::http_call(service::parse_endpoint(socket), raw);
    EXPECT_EQ(png.status, 200u);
    EXPECT_EQ(decode_png(png.body).height, 200);
    raw.target = "/v1/sandboxes/" + id + "/desktop/screenshot?x=0&y=0&width=321&height=1";
    EXPECT_EQ(service::http_call(service::parse_endpoint(socket), raw).status, 400u);
    raw.target = "/v1/sandboxes/nosuch/desktop/cursor";
    EXPECT_EQ(service::http_call(service::parse_endpoint(socket), raw).status, 404u);
    remote.close();
  }
  ::kill(daemon.pid, SIGTERM);
  int status = 0;
  ::waitpid(std::exchange(daemon.pid, -1), &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "mayurad ended with " << status;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mayura::testing
