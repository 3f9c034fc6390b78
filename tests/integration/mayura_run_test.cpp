// mayura-run, as a user runs it.

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>

#include "harness.hpp"
#include "tests/support/png_image.hpp"
#include "tests/world/world.hpp"
#include "image_archives.hpp"

namespace mayura::testing {
namespace {

struct Outcome {
  int status = -1;
  std::string out;
  std::string err;
};

enum class Via { local, daemon };

// The value of NAME=VALUE in a list of such words ("" if absent).
std::string env_value(const std::string& env, const std::string& name) {
  std::istringstream words(env);
  for (std::string w; words >> w;) {
    if (w.rfind(name + "=", 0) == 0) return w.substr(name.size() + 1);
  }
  return {};
}

nlohmann::json split_list(const std::string& list) {
  nlohmann::json items = nlohmann::json::array();
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

// Runs mayura-run with `args` (a shell-quoted string), the same tests both
// ways: with --local, under the test's own engine options passed through the
// environment the tool reads; or through a mayurad (MAYURA_HOST) that the
// test starts on a scratch socket with those same options. The daemon starts
// at the first run, so that it lives in the network namespace the test may
// have entered, and knows the DNS servers and public ranges the run names.
class MayuraRunTest : public NativeTest, public ::testing::WithParamInterface<Via> {
 protected:
  void SetUp() override {
    NativeTest::SetUp();
    // What the daemon leaves when it ends is reaped here, as systemd would.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    default_socket_dir_.emplace();
  }
  void TearDown() override {
    stop_daemon();
    default_socket_dir_.reset();
    NativeTest::TearDown();
  }

  bool via_daemon() const { return GetParam() == Via::daemon; }

  // `reader`: a command that reads mayura-run's output through a pipe
  // (`head -1`); the status is then mayura-run's own (pipefail).
  Outcome run(const std::string& args, const std::string& input = "", const std::string& env = "",
              const std::string& reader = "") {
    const std::string dir = options().state_dir + "-run";
    std::filesystem::create_directories(dir);
    const std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
    std::ofstream(in) << input;
    std::string engine;
    std::string tool_args = args;
    if (via_daemon()) {
      start_daemon(env);
      engine = " MAYURA_HOST=unix://" + socket_;
    } else if (args.rfind("snapshot ", 0) == 0) {
      tool_args = "snapshot --local " + args.substr(9);
    } else if (args.rfind("volume ", 0) == 0) {
      tool_args = "volume --local " + args.substr(7);
    } else if (args.rfind("mcp", 0) == 0) {
      tool_args = "mcp --local" + args.substr(3);
    } else if (args.rfind("image ", 0) != 0 && args != "doctor") {
      tool_args = "--local " + args;
    }
    // The engine settings are there both ways: a daemon must ignore them.
    const std::string command =
        env + engine + " MAYURA_STATE_DIR=" + options().state_dir + " MAYURA_DISK_DIR=" + options().disk_dir +
        " MAYURA_SNAPSHOT_DIR=" + options().snapshot_dir + " MAYURA_VOLUME_DIR=" + options().volume_dir +
        " MAYURA_CGROUP_ROOT=" + options().cgroup_root + " MAYURA_ID_BASE=" + std::to_string(options().id_base) +
        " MAYURA_ID_SLOTS=" + std::to_string(options().id_slots) + " MAYURA_IMAGE_DIR=" + options().image_dir +
        " MAYURA_IMAGE_STORE=" + options().image_store + " " + MAYURA_RUN_PATH + " " + tool_args + " <" + in + " 2>" +
        err + (reader.empty() ? " >" + out : " | " + reader + " >" + out);
    std::ofstream(dir + "/run.sh") << "set -o pipefail\n" << command << "\n";
    const int raw = std::system(("bash " + dir + "/run.sh").c_str());
    Outcome r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_host(out);
    r.err = read_host(err);
    std::filesystem::remove_all(dir);
    return r;
  }

  // The reason a failed run names, both ways (a daemon's message is its own
  // after "mayurad: ").
  static bool failed_with(const Outcome& r, const std::string& reason, const std::string& message = "") {
    const std::string head = "mayura-run: " + reason + ": ";
    if (r.status != 125 || r.err.rfind(head, 0) != 0) return false;
    return message.empty() || r.err.find(message) != std::string::npos;
  }

 private:
  void start_daemon(const std::string& env) {
    if (daemon_ > 0) return;
    const NativeOptions& o = options();
    socket_ = o.state_dir + "-mayurad.sock";
    nlohmann::json config = daemon_config(
        o, socket_,
        {{"maxLifetimeMs", 3600 * 1000}, {"network", {"none", "allow", "all"}}, {"maxWriteBytes", 1 << 30}});
    if (const std::string dns = env_value(env, "MAYURA_DNS_SERVERS"); !dns.empty())
      config["dnsServers"] = split_list(dns);
    if (const std::string ranges = env_value(env, "MAYURA_PUBLIC_RANGES"); !ranges.empty()) {
      config["publicRanges"] = split_list(ranges);
    }
    const std::string config_path = o.state_dir + "-mayurad.json";
    std::ofstream(config_path) << config.dump();
    daemon_ = start_mayurad(MAYURAD_PATH, config_path, true);
    EXPECT_TRUE(wait_until_served(socket_)) << "mayurad did not start on " << socket_;
  }

  // SIGTERM, as systemctl stop sends it: the daemon releases every sandbox
  // and exits 0, before the leak check.
  void stop_daemon() {
    if (daemon_ <= 0) return;
    stop_mayurad(std::exchange(daemon_, -1), options());
    std::filesystem::remove(options().state_dir + "-mayurad.json");
  }

  pid_t daemon_ = -1;
  std::string socket_;
  // Local runs find no host's daemon at the default socket.
  std::optional<OwnDefaultSocketDir> default_socket_dir_;
};

// --desktop gives the command a display; --screenshot writes the screen
// when the command ends, or, as here, at --timeout before it is stopped
// (the tests' X client paints and runs until then).
TEST_P(MayuraRunTest, ADesktopRunWritesTheScreenAtTheTimeout) {
  const std::string png = options().state_dir + "-screen.png";
  const Outcome shown =
      run("--desktop 320x200 --screenshot " + png +
          " --timeout 5 --copy-in " X_CLIENT_PATH
          ":/workspace/x_client -- sh -c 'chmod 755 x_client && echo $DISPLAY && exec ./x_client log'");
  EXPECT_EQ(shown.status, 124) << shown.err;
  EXPECT_EQ(shown.out, ":0\n");
  std::ifstream in(png, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::filesystem::remove(png);
  const PngImage image = decode_png(bytes);
  EXPECT_EQ(image.width, 320);
  EXPECT_EQ(image.height, 200);
  EXPECT_EQ(image.at(10, 10), 0xff0000u);
  EXPECT_EQ(image.at(225, 125), 0x00ff00u);
  // --json at the timeout: the output until then, and the time it ran
  const Outcome json_run =
      run("--json --desktop 64x64 --screenshot " + png + " --timeout 1 -- sh -c 'echo before; echo err >&2; sleep 30'");
  EXPECT_EQ(json_run.status, 124) << json_run.err;
  const auto printed = nlohmann::json::parse(json_run.out);
  EXPECT_EQ(printed["stdout"], "before\n");
  EXPECT_EQ(printed["stderr"], "err\n");
  EXPECT_EQ(printed["timedOut"], true);
  EXPECT_EQ(printed["exitCode"], nullptr);
  EXPECT_GE(printed["durationMs"].get<std::int64_t>(), 1000);
  EXPECT_LT(printed["durationMs"].get<std::int64_t>(), 30000);
  std::filesystem::remove(png);
  // a command that ends: the screen as it left it, and its own status
  const Outcome ended = run("--desktop 64x64 --screenshot " + png + " -- sh -c 'exit 3'");
  EXPECT_EQ(ended.status, 3) << ended.err;
  std::ifstream again(png, std::ios::binary);
  EXPECT_EQ(decode_png(std::string((std::istreambuf_iterator<char>(again)), {})).width, 64);
  std::filesystem::remove(png);
  // bad input, before anything is made
  EXPECT_TRUE(failed_with(run("--screenshot " + png + " true"), "INVALID_INPUT", "--screenshot needs --desktop"));
  EXPECT_TRUE(failed_with(run("--desktop 10x10 true"), "INVALID_INPUT"));
  EXPECT_TRUE(failed_with(run("--desktop --screenshot /nonexistent/dir/x.png true"), "INVALID_INPUT"));
  // a run that fails leaves no empty file where the screenshot would be
  EXPECT_TRUE(failed_with(run("--desktop 10x10 --screenshot " + png + " true"), "INVALID_INPUT"));
  EXPECT_FALSE(std::filesystem::exists(png));
}

INSTANTIATE_TEST_SUITE_P(Both, MayuraRunTest, ::testing::Values(Via::local, Via::daemon),
                         [](const auto& p) { return p.param == Via::local ? "Local" : "Daemon"; });

TEST_P(MayuraRunTest, RunsACommandAndPassesItsExitStatus) {
  Outcome r = run("-- sh -c 'echo hello; echo oops >&2; exit 7'");
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_EQ(run("true").status, 0);
}

// A reader that goes away ends the command and the run, as SIGPIPE ends a
// pipeline's writer: 141, and the sandbox released (the teardown finds
// nothing of it left), never mayura-run killed with its state behind.
TEST_P(MayuraRunTest, AReaderThatGoesAwayEndsTheRunAndLeavesNothing) {
  Outcome r = run("-- yes", "", "", "head -1");
  EXPECT_EQ(r.status, 141) << r.err;
  EXPECT_EQ(r.out, "y\n");
  EXPECT_EQ(r.err, "");
}

// -i passes the input on as it comes, to its end; -t gives the command a
// terminal (here without -i: the caller's input is a file, its terminal is
// left alone, and the size is the default). A daemon gives neither yet:
// both are refused before anything is made. Neither goes with --json, nor
// -i with --stdin.
TEST_P(MayuraRunTest, InteractiveInputAndTerminals) {
  // (Through a daemon, the command is one of the sandbox's, attached to
  // over a WebSocket.)
  const Outcome r = run("-i -- sh -c 'while read l; do echo got-$l; done; echo end'", "a\nb\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "got-a\ngot-b\nend\n");
  // More than the engine holds unread (16 MiB), for a command that reads
  // late: mayura-run waits for it, as a pipe's writer would.
  const Outcome big = run("-i -- sh -c 'sleep 1; wc -c'", std::string(std::size_t{20} << 20, 'x'));
  EXPECT_EQ(big.status, 0) << big.err;
  EXPECT_EQ(big.out, "20971520\n");
  const Outcome t = run("-t -- sh -c 'tty; stty size; echo oops >&2; exit 4'");
  EXPECT_EQ(t.status, 4);
  EXPECT_EQ(t.out, "/dev/pts/0\r\n24 80\r\noops\r\n");
  EXPECT_TRUE(failed_with(run("-it --json -- true"), "INVALID_INPUT", "not with --json"));
  EXPECT_TRUE(failed_with(run("-i --stdin -- true"), "INVALID_INPUT", "reads it all first"));
}

TEST_P(MayuraRunTest, TimeoutIs124) {
  Outcome r = run("--timeout 0.3 -- sh -c 'setsid sleep 100 & sleep 100'");
  EXPECT_EQ(r.status, 124);
}

TEST_P(MayuraRunTest, BadInputAndMissingImagesAre125WithTheReason) {
  // A daemon takes images by name only: no host path reaches it.
  Outcome r = run("--image /nonexistent -- true");
  if (via_daemon()) {
    EXPECT_TRUE(failed_with(r, "PERMISSION_DENIED", "--local runs a directory image")) << r.err;
  } else {
    EXPECT_TRUE(failed_with(r, "INVALID_CONFIG")) << r.err;
  }
  EXPECT_TRUE(failed_with(run("--image no-such-image -- true"), "INVALID_CONFIG"));
  r = run("--bogus true");
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err.rfind("mayura-run: INVALID_INPUT: ", 0), 0u) << r.err;
  for (const char* bad : {"--cpus 0 -- true", "--cpus x -- true", "--memory 1.5 -- true", "--memory 8 -- true",
                          "--pids 0 -- true", "--seccomp /nonexistent -- true"}) {
    r = run(bad);
    EXPECT_EQ(r.status, 125) << bad;
    EXPECT_EQ(r.err.rfind("mayura-run: INVALID_INPUT: ", 0), 0u) << bad << ": " << r.err;
  }
  r = run("");
  EXPECT_EQ(r.status, 125);
}

TEST_P(MayuraRunTest, JsonHasTheSeedsKeys) {
  Outcome r = run("--json -- sh -c 'echo out; echo err >&2; exit 2'");
  EXPECT_EQ(r.status, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exitCode"], 2);
  EXPECT_EQ(j["stdout"], "out\n");
  EXPECT_EQ(j["stderr"], "err\n");
  EXPECT_EQ(j["truncated"], false);
  EXPECT_EQ(j["timedOut"], false);
  EXPECT_TRUE(j["durationMs"].is_number());
  r = run("--json --timeout 0.2 -- sleep 10");
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["exitCode"].is_null());
  EXPECT_EQ(j["timedOut"], true);
}

TEST_P(MayuraRunTest, EnvCopyInStdinAndCwd) {
  const std::string file = options().state_dir + "-copy.txt";
  std::ofstream(file) << "copied";
  Outcome r = run("--env A=1 --env FROM_HOST --copy-in " + file +
                      ":sub/in.txt --cwd sub -- sh -c 'echo $A $FROM_HOST; cat in.txt; pwd'",
                  "", "FROM_HOST=secret-value");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1 secret-value\ncopied/workspace/sub\n");
  std::filesystem::remove(file);
  r = run("--stdin -- wc -c", "12345");
  EXPECT_EQ(r.out, "5\n");
  r = run("-- wc -c", "12345");  // without --stdin the command reads nothing
  EXPECT_EQ(r.out, "0\n");
}

// --copy-out: a file the command wrote comes back to the host once the
// command has ended, whatever its status; one that is not there is said by
// name, writes nothing, and the run exits 125; a host file that cannot be
// written is refused before any sandbox is made.
TEST_P(MayuraRunTest, CopyOutBringsAFileBackAfterTheCommand) {
  const std::string file = options().state_dir + "-out.txt";
  Outcome r = run("--copy-out out/result.txt:" + file + " -- sh -c 'mkdir out; echo made > out/result.txt; exit 3'");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(read_host(file), "made\n");
  std::filesystem::remove(file);
  r = run("--copy-out nosuch.txt:" + file + " -- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--copy-out nosuch.txt"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(file));
  r = run("--copy-out nocolon -- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--copy-out takes PATH:HOSTFILE"), std::string::npos) << r.err;
  r = run("--copy-out a:/nonexistent-dir/x -- touch made-anyway");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--copy-out /nonexistent-dir/x"), std::string::npos) << r.err;
}

// mayura-run mcp, as an MCP client's scripted session: the handshake, the
// tools, calls that run at once and answer by id, a tool's failure as an
// error result, JSON-RPC's errors; the input's end releases the sandbox
// (the test's end checks nothing is left). Options for one command are
// refused before anything is made.
TEST_P(MayuraRunTest, McpServesTheAgentToolsOverStdio) {
  using nlohmann::json;
  const auto request = [](int id, const std::string& method, const json& params) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
  };
  const auto call = [&](int id, const std::string& tool, const json& arguments) {
    return request(id, "tools/call", {{"name", tool}, {"arguments", arguments}});
  };
  const std::string session =
      request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()}}) +
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})" + "\n" + request(2, "tools/list", json::object()) +
      call(3, "sandbox_exec", {{"command", "echo hi"}}) + call(4, "sandbox_start", {{"command", "echo started"}}) +
      call(5, "sandbox_read", {{"path", "/no/such"}}) + call(6, "sandbox_nosuch", json::object()) + "not json\n" +
      request(7, "resources/list", json::object());
  const Outcome r = run("mcp --tools read,exec,background --lifetime 120", session);
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<int, json> replies;
  std::istringstream lines(r.out);
  int unnamed = 0;
  for (std::string line; std::getline(lines, line);) {
    const json reply = json::parse(line);
    EXPECT_EQ(reply["jsonrpc"], "2.0");
    if (reply["id"].is_null()) ++unnamed;
    else replies[reply["id"].get<int>()] = reply;
  }
  EXPECT_EQ(unnamed, 1) << r.out;  // the line that was no JSON
  ASSERT_EQ(replies.size(), 7u) << r.out;
  EXPECT_EQ(replies[1]["result"]["protocolVersion"], "2025-06-18");
  std::vector<std::string> names;
  for (const json& t : replies[2]["result"]["tools"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"sandbox_read", "sandbox_list", "sandbox_url", "sandbox_exec",
                                             "sandbox_start", "sandbox_commands", "sandbox_output", "sandbox_input",
                                             "sandbox_signal", "sandbox_stop", "sandbox_wait"}));
  const json exec = json::parse(replies[3]["result"]["content"][0]["text"].get<std::string>());
  EXPECT_EQ(exec["exitCode"], 0);
  EXPECT_EQ(exec["stdout"], "hi\n") << exec.dump();
  EXPECT_EQ(replies[4]["result"]["isError"], false);
  EXPECT_EQ(replies[5]["result"]["isError"], true);
  EXPECT_EQ(replies[5]["result"]["content"][0]["text"].get<std::string>().rfind("NOT_FOUND: ", 0), 0u);
  EXPECT_EQ(replies[6]["error"]["code"], -32602);
  EXPECT_EQ(replies[7]["error"]["code"], -32601);

  for (const std::string bad : {"mcp -- true", "mcp -t", "mcp --json", "mcp --tools exec,nosuch", "mcp --tools desktop",
                                "mcp --copy-out a:/tmp/b", "mcp --env A=1", "mcp --tools"}) {
    const Outcome refused = run(bad, "");
    EXPECT_EQ(refused.status, 125) << bad;
    EXPECT_NE(refused.err.find("INVALID_INPUT"), std::string::npos) << bad << ": " << refused.err;
    EXPECT_TRUE(refused.out.empty()) << bad;
  }
  EXPECT_EQ(run("mcp --help").status, 0);
}

TEST_P(MayuraRunTest, HelpAndVersion) {
  Outcome r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("usage: mayura-run"), std::string::npos);
  r = run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("mayura-run ", 0), 0u);
}

TEST_P(MayuraRunTest, VersionAndDoctorSayWhatTheCgroupsEnforce) {
  // What each layout of tests/vm (and this project's hybrid machines) has.
  const std::string layout = test_layout();
  std::string kind, enforces, placed;
  if (layout == "hybrid") {
    kind = "\ncgroups: hybrid (cgroup2 at /sys/fs/cgroup/unified";
    enforces =
        "enforces cpus [v1 /sys/fs/cgroup/cpu], memory (no swap) [v1 /sys/fs/cgroup/memory], pids [v1 "
        "/sys/fs/cgroup/pids]; cannot enforce disk I/O";
    placed = "\nsandboxes under /sys/fs/cgroup/unified/mayura (the engine runs in the root cgroup)\n";
  } else if (layout == "v1") {
    kind = "\ncgroups: legacy (cgroup v1 only; the engine mounts a cgroup2 of its own";
    enforces =
        "enforces cpus [v1 /sys/fs/cgroup/cpu,cpuacct], memory (no swap) [v1 /sys/fs/cgroup/memory], pids [v1 "
        "/sys/fs/cgroup/pids]; cannot enforce disk I/O";
    placed = "\nsandboxes under /run/mayura-cgroup2/mayura (the engine runs in the root cgroup)\n";
  } else {
    kind = "\ncgroups: unified (cgroup2 at /sys/fs/cgroup)";
    enforces = "enforces cpus [cgroup2], memory (no swap) [cgroup2], pids [cgroup2], disk I/O [cgroup2]";
    if (layout == "v2-root") {
      placed = "\nsandboxes under /sys/fs/cgroup/mayura (the engine runs in the root cgroup)\n";
    } else if (layout == "v2-delegated") {
      const std::string service = "/sys/fs/cgroup/system.slice/mayurad.service";
      placed = "\nsandboxes under " + service + "/mayura (the engine's delegated subtree " + service +
               "); the engine's processes in " + service + "/engine\n";
    } else {
      placed =
          "\nsandboxes under /sys/fs/cgroup/mayura (the top of the hierarchy; the engine's cgroup "
          "/user.slice/user-0.slice/session-1.scope is not delegated)\n";
    }
  }
  for (const char* args : {"--version", "doctor"}) {
    // under the test's own root, as configured
    Outcome r = run(args);
    EXPECT_EQ(r.status, 0) << args;
    EXPECT_EQ(r.out.rfind("mayura-run ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(kind), std::string::npos) << layout << "\n" << r.out;
    EXPECT_NE(r.out.find(enforces), std::string::npos) << layout << "\n" << r.out;
    EXPECT_NE(r.out.find("\nsandboxes under " + options().cgroup_root + " (configured)"), std::string::npos) << r.out;
    const char* runs = via_daemon() ? "\nruns: through mayurad at unix://" : "\nruns: an engine in this process";
    EXPECT_NE(r.out.find(runs), std::string::npos) << r.out;
    // where an engine with no root configured would put its sandboxes
    const std::string bare = std::string("env -u MAYURA_CGROUP_ROOT ") + MAYURA_RUN_PATH + " " + args + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(bare.c_str(), "r"), ::pclose);
    ASSERT_TRUE(pipe);
    std::string out;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) out.append(buffer, n);
    EXPECT_NE(out.find(placed), std::string::npos) << layout << "\n" << out;
  }
}

TEST_P(MayuraRunTest, LimitsReachTheCommand) {
  Outcome r = run("--memory 48 --json -- python3 -c 'x = bytearray(200 << 20)'");
  EXPECT_EQ(r.status, 137);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exitCode"], 137);
  EXPECT_EQ(j["oomKilled"], true);
  r = run("--pids 5 -- sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait'");
  EXPECT_NE(r.err.find("fork"), std::string::npos) << r.err;  // "Cannot fork"
  r = run("--cpus 0.5 --pids 64 --memory 256 -- sh -c 'echo fine'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "fine\n");
  r = run("--disk 32 -- sh -c 'stat -f -c %T .; head -c 40M /dev/zero > big'");
  EXPECT_EQ(r.out, "ext2/ext3\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  // --disk-io: bounded where the host has cgroup2's io controller, refused
  // clearly elsewhere; a malformed one before anything is made.
  r = run("--disk 32 --disk-io wbps=1M,riops=100 -- sh -c 'echo bounded'");
  if (test_layout().rfind("v2-", 0) == 0) {
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "bounded\n");
  } else {
    EXPECT_TRUE(failed_with(r, "INVALID_INPUT", "cannot bound a disk's I/O")) << r.err;
  }
  // --writable-root: on a disk, and an image from the store only.
  EXPECT_TRUE(failed_with(run("--writable-root -- true"), "INVALID_INPUT", "lives on the sandbox's disk"));
  EXPECT_TRUE(
      failed_with(run("--disk 16 --writable-root -- true"), "INVALID_INPUT", "needs an image from the image store"));
  for (const char* bad : {"wbps", "wbps=2X", "bps=1", "wbps=1M,", "riops=1.5"}) {
    r = run(std::string("--disk 32 --disk-io ") + bad + " -- true");
    EXPECT_TRUE(failed_with(r, "INVALID_INPUT", "--disk-io")) << bad << ": " << r.err;
  }
}

// --snapshot-to keeps the disk as the command left it, whatever its exit
// status (which stays the command's); --from-snapshot starts from it; and
// `snapshot list` and `delete` show and remove them, both ways.
TEST_P(MayuraRunTest, SnapshotsAreTakenStartedFromListedAndDeleted) {
  Outcome r = run("--disk 16 --snapshot-to x -- sh -c 'echo hi > f'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = run("--from-snapshot x -- cat f");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  r = run("snapshot list");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("NAME ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nx "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 16 MiB "), std::string::npos) << r.out;
  // taken from a snapshot, after a failed command; --json says what was taken
  r = run("--from-snapshot x --snapshot-to y --json -- sh -c 'echo more >> f; exit 3'");
  EXPECT_EQ(r.status, 3) << r.err;
  const auto printed = nlohmann::json::parse(r.out);
  EXPECT_EQ(printed["exitCode"], 3);
  EXPECT_EQ(printed["snapshot"]["name"], "y");
  EXPECT_EQ(printed["snapshot"]["diskMiB"], 16);
  EXPECT_GT(printed["snapshot"]["storedBytes"].get<std::int64_t>(), 0);
  // ... and after a timeout
  r = run("--from-snapshot y --snapshot-to y --timeout 1 -- sh -c 'echo last >> f; sleep 30'");
  EXPECT_EQ(r.status, 124) << r.err;
  r = run("--from-snapshot y -- cat f");
  EXPECT_EQ(r.out, "hi\nmore\nlast\n") << r.err;
  r = run("--from-snapshot x -- cat f");  // x as it was
  EXPECT_EQ(r.out, "hi\n") << r.err;
  // a disk of another size than the snapshot's
  EXPECT_TRUE(failed_with(run("--disk 32 --from-snapshot x -- true"), "INVALID_INPUT", "16 MiB"));
  r = run("snapshot list --json");
  EXPECT_EQ(r.status, 0) << r.err;
  nlohmann::json names = nlohmann::json::array();
  for (const auto& s : nlohmann::json::parse(r.out)) names.push_back(s["name"]);
  EXPECT_EQ(names, nlohmann::json({"x", "y"})) << r.out;
  r = run("snapshot delete x y");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "deleted x\ndeleted y\n");
  r = run("snapshot list --json");
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::array()) << r.out;
  // gone: nothing starts from it, and deleting it again is said
  EXPECT_TRUE(failed_with(run("--from-snapshot x -- true"), "NOT_FOUND", "no snapshot named x"));
  EXPECT_TRUE(failed_with(run("snapshot delete x"), "NOT_FOUND", "no snapshot named x"));
}

// Bad input is refused before anything is made: nothing runs, nothing is kept.
TEST_P(MayuraRunTest, SnapshotOptionsRefuseBadInputBeforeAnythingIsMade) {
  Outcome r = run("--snapshot-to x -- sh -c 'echo ran'");
  EXPECT_TRUE(failed_with(r, "INVALID_INPUT", "--snapshot-to needs a disk")) << r.err;
  EXPECT_EQ(r.out, "");
  r = run("--from-snapshot missing -- sh -c 'echo ran'");
  EXPECT_TRUE(failed_with(r, "NOT_FOUND", "no snapshot named missing")) << r.err;
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> bad = {"--disk 16 --snapshot-to .x -- true",
                                        "--from-snapshot a/b -- true",
                                        "--disk 16 --snapshot-to " + std::string(65, 'a') + " -- true",
                                        "snapshot delete ../x",
                                        "snapshot delete",
                                        "snapshot list x",
                                        "snapshot frob",
                                        "snapshot list --nope"};
  for (const std::string& args : bad) {
    r = run(args);
    EXPECT_TRUE(failed_with(r, "INVALID_INPUT")) << args << ": " << r.err;
  }
  r = run("snapshot list --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::array()) << r.out;
}

// A volume outlives its runs: one writes into it, the next reads it
// read-only and cannot write; `volume list` shows it and `delete` removes
// it, both ways. Each run waits for its volumes to be let go before it
// exits, so that the next command finds them free at once.
TEST_P(MayuraRunTest, VolumesAreMadeMountedListedAndDeleted) {
  Outcome r = run("volume create data 32");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "created data\n");
  r = run("volume create more 16");
  EXPECT_EQ(r.status, 0) << r.err;
  r = run("--volume data:/data -- sh -c 'mkdir /data/src && echo kept > /data/src/f'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // read-only, under the workdir, beside another read-write; a write fails
  r =
      run("--volume data:/workspace/d:ro --volume more:/more -- sh -c 'cat d/src/f > /more/copy; cat d/src/f; "
          "echo x > d/src/f'");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "kept\n");
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << r.err;
  // through the steps a run goes (a file copied out), and with --json
  const std::string copied = options().state_dir + "-copied";
  r = run("--json --volume more:/more --copy-out /more/copy:" + copied + " -- cat /more/copy");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["stdout"], "kept\n");
  EXPECT_EQ(read_host(copied), "kept\n");
  std::filesystem::remove(copied);
  r = run("volume list");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("NAME ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" IN USE "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ndata "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 32 MiB  no "), std::string::npos) << r.out;
  r = run("volume list --json");
  EXPECT_EQ(r.status, 0) << r.err;
  const auto listed = nlohmann::json::parse(r.out);
  ASSERT_EQ(listed.size(), 2u) << r.out;
  EXPECT_EQ(listed[0]["name"], "data");
  EXPECT_EQ(listed[0]["sizeMiB"], 32);
  EXPECT_EQ(listed[0]["inUse"], false);
  EXPECT_GT(listed[0]["createdAt"].get<std::int64_t>(), 0);
  EXPECT_EQ(listed[1]["name"], "more");
  // a name taken is refused, and the volume stays as it was
  EXPECT_TRUE(failed_with(run("volume create data 16"), "INVALID_INPUT", "data"));
  // deleted right after a run: its volume was let go before it exited
  r = run("--volume data:/data -- true");
  EXPECT_EQ(r.status, 0) << r.err;
  r = run("volume delete data more");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "deleted data\ndeleted more\n");
  r = run("volume list --json");
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::array()) << r.out;
  // gone: nothing mounts it, and deleting it again is said
  EXPECT_TRUE(failed_with(run("--volume data:/data -- true"), "NOT_FOUND", "no volume named data"));
  EXPECT_TRUE(failed_with(run("volume delete data"), "NOT_FOUND", "no volume named data"));
}

// Bad input is refused before anything is made: nothing runs, nothing is kept.
TEST_P(MayuraRunTest, VolumeOptionsRefuseBadInputBeforeAnythingIsMade) {
  Outcome r = run("--volume missing:/v -- sh -c 'echo ran'");
  EXPECT_TRUE(failed_with(r, "NOT_FOUND", "no volume named missing")) << r.err;
  EXPECT_EQ(r.out, "");
  std::string seventeen;
  for (int i = 0; i < 17; ++i) seventeen += " --volume v" + std::to_string(i) + ":/v" + std::to_string(i);
  const std::vector<std::string> bad = {"--volume v -- true",
                                        "--volume v: -- true",
                                        "--volume :/v -- true",
                                        "--volume v:/v: -- true",
                                        "--volume v:/v:rw -- true",
                                        "--volume v:/v:ro:ro -- true",
                                        "--volume v:relative -- true",
                                        "--volume .v:/v -- true",
                                        "--volume a/b:/v -- true",
                                        "--volume v:/ -- true",
                                        "--volume v:/proc/v -- true",
                                        "--volume v:/a/../b -- true",
                                        "--volume v:/tmp -- true",
                                        "--volume v:/a --volume v:/b -- true",
                                        "--volume v:/a --volume w:/a -- true",
                                        seventeen + " -- true",
                                        "--volume -- true",
                                        "volume create",
                                        "volume create v",
                                        "volume create v 8",
                                        "volume create v 16x",
                                        "volume create v 16777217",
                                        "volume create v 16 32",
                                        "volume create .v 16",
                                        "volume create v 16 --json",
                                        "volume delete",
                                        "volume delete ../x",
                                        "volume list x",
                                        "volume frob",
                                        "volume list --nope"};
  for (const std::string& args : bad) {
    r = run(args);
    EXPECT_TRUE(failed_with(r, "INVALID_INPUT")) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
  r = run("--volume v:/v:rw -- true");
  EXPECT_NE(r.err.find("NAME:PATH or NAME:PATH:ro"), std::string::npos) << r.err;
  EXPECT_TRUE(failed_with(run("volume delete missing"), "NOT_FOUND", "no volume named missing"));
  r = run("volume list --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::array()) << r.out;
}

TEST_P(MayuraRunTest, SeccompTakesAnOciProfileFile) {
  const std::string file = options().state_dir + "-profile.json";
  std::ofstream(file) << R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["mkdir", "mkdirat", "no_such_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]})";
  Outcome r = run("--seccomp " + file + " -- sh -c 'mkdir /workspace/d || echo refused'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "refused\n");
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  std::ofstream(file) << "{\"defaultAction\": 42}";
  r = run("--seccomp " + file + " -- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_TRUE(failed_with(r, "INVALID_INPUT", "the seccomp profile is not usable")) << r.err;
  std::filesystem::remove(file);
}

TEST_P(MayuraRunTest, PortsArePublishedAndTheirUrlsPrinted) {
  // in a network namespace of the test's own: mayura-run listens on its 127.0.0.1
  enter_own_network_namespace();
  // The command answers one request on port 8000 (a listing of /workspace)
  // and ends; the test fetches it through the URL mayura-run prints, while
  // it runs. (Its own bound, should the fetch never come.)
  const std::string printed = options().state_dir + "-run/err";
  std::string fetched;
  std::thread fetch([&] {
    const std::string head = "mayura-run: port 8000 is at ";
    for (int i = 0; i < 600; ++i) {
      const std::string err = read_host(printed);
      if (const auto at = err.find(head); at != std::string::npos && err.find('\n', at) != std::string::npos) {
        // (the URL is printed as the sandbox starts, before its server listens)
        const std::string url = err.substr(at + head.size(), err.find('\n', at) - at - head.size());
        for (int tries = 0; tries < 300 && fetched.empty(); ++tries) {
          if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
          fetched = run_shell("curl -sS --max-time 20 " + url + " 2>/dev/null");
        }
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  Outcome r =
      run("--port 8000 --port 9000 -- timeout 60 python3 -c 'import http.server as h; "
          "h.HTTPServer((\"\", 8000), h.SimpleHTTPRequestHandler).handle_request()'");
  fetch.join();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("mayura-run: port 8000 is at http://127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mayura-run: port 9000 is at http://127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_NE(fetched.find("Directory listing for /"), std::string::npos) << fetched;
  for (const char* bad :
       {"--port 0 -- true", "--port 70000 -- true", "--port x -- true", "--port 80 --port 80 -- true"}) {
    r = run(bad);
    EXPECT_EQ(r.status, 125) << bad;
    EXPECT_EQ(r.err.rfind("mayura-run: INVALID_INPUT: ", 0), 0u) << bad << ": " << r.err;
  }
}

TEST_P(MayuraRunTest, AllowAndNetworkAllReachTheWorldAndNothingElse) {
  // in a world of the test's own, whose DNS and range mayura-run is told of
  enter_own_network_namespace();
  World world;
  const std::string env =
      std::string("MAYURA_DNS_SERVERS=") + World::kDnsAddress + " MAYURA_PUBLIC_RANGES=203.0.113.0/24";
  Outcome r =
      run("--allow allowed.test --allow '*.allowed.test:8081' -- sh -c "
          "'curl -sS http://allowed.test/ && curl -sS --noproxy \\* http://www.allowed.test:8081/ && "
          "curl -sS -o /dev/null -w %{http_code} http://other.test/'",
          "", env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("hello from 203.0.113.10:80"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hello from 203.0.113.10:8081"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 3), "403") << r.out;
  r = run("--network all -- curl -sS http://203.0.113.11:8081/", "", env);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("hello from 203.0.113.11:8081"), std::string::npos) << r.out;
  for (const char* bad : {"--allow '*' -- true", "--allow '*.test' -- true", "--network all --allow a.test -- true",
                          "--network some -- true", "--allow 1.2.3.4 -- true"}) {
    r = run(bad, "", env);
    EXPECT_EQ(r.status, 125) << bad;
    EXPECT_NE(r.err.find("mayura-run: "), std::string::npos) << bad << ": " << r.err;
  }
  r = run("-- curl -sS --max-time 5 http://allowed.test/", "", env);  // none by default
  EXPECT_EQ(r.status, 6) << r.err;
}

TEST_P(MayuraRunTest, ImageImportListRunInspectAndRemove) {
  namespace img = mayura::testing::images;
  const std::string archive = options().state_dir + "-busybox.tar";
  auto spec = img::busybox_spec(img::Compression::gzip);
  spec.cmd = {"/bin/sh", "-c", "echo default command in $(pwd)"};
  img::write_docker_archive(archive, spec, {"busybox:cli"});

  auto r = run("image import " + archive);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("busybox:cli\tsha256:", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("3 layers unpacked"), std::string::npos) << r.err;
  r = run("image list");
  EXPECT_NE(r.out.find("busybox:cli"), std::string::npos) << r.out;
  r = run("--image busybox:cli -- cat hello.txt");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello from the image\n");
  r = run("--image busybox:cli");
  EXPECT_EQ(r.out, "default command in /app\n") << r.err;
  r = run("--image host");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("no command given"), std::string::npos) << r.err;
  r = run("image inspect busybox:cli");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["config"]["User"], "app");
  EXPECT_EQ(info["layers"].size(), 3u);
  r = run("image rm busybox:cli");
  EXPECT_EQ(r.status, 0) << r.err;
  r = run("--image busybox:cli -- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("INVALID_CONFIG"), std::string::npos) << r.err;
  r = run("image import " + archive + ".missing");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("INVALID_INPUT"), std::string::npos) << r.err;
  r = run("image rm busybox:cli");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
  // From standard input, as `docker save IMAGE | mayura-run image import -` gives it.
  r = run("image import - piped:1", read_host(archive));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("piped:1\t", 0), 0u) << r.out;
  EXPECT_EQ(run("--image piped:1 -- cat hello.txt").out, "hello from the image\n");
  for (const auto& e : std::filesystem::directory_iterator(options().image_store)) {
    EXPECT_EQ(e.path().filename().string().rfind("stdin-", 0), std::string::npos) << "left: " << e.path();
  }
  std::filesystem::remove(archive);
}

}  // namespace
}  // namespace mayura::testing

namespace mayura::testing {
namespace {

// The choice of engine itself: MAYURA_HOST, the default socket, --local.
class MayuraRunEngineTest : public NativeTest {
 protected:
  // The default socket is the test's own to serve or leave unserved.
  void SetUp() override {
    NativeTest::SetUp();
    default_socket_dir_.emplace();
  }
  void TearDown() override {
    default_socket_dir_.reset();
    NativeTest::TearDown();
  }

  // mayura-run with the test's engine options and `env` before it; stdout
  // and stderr together.
  Outcome run(const std::string& env, const std::string& args) {
    const std::string out = options().state_dir + "-out";
    const std::string command = env + " MAYURA_STATE_DIR=" + options().state_dir +
                                " MAYURA_CGROUP_ROOT=" + options().cgroup_root +
                                " MAYURA_ID_BASE=" + std::to_string(options().id_base) +
                                " MAYURA_ID_SLOTS=" + std::to_string(options().id_slots) + " " + MAYURA_RUN_PATH + " " +
                                args + " </dev/null >" + out + " 2>&1";
    const int raw = std::system(command.c_str());
    Outcome r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_host(out);
    std::filesystem::remove(out);
    return r;
  }

 private:
  std::optional<OwnDefaultSocketDir> default_socket_dir_;
};

TEST_F(MayuraRunEngineTest, ADaemonNamedThatDoesNotAnswerIsAFailureNotAFallBack) {
  const std::string host = "MAYURA_HOST=unix://" + options().state_dir + "-nobody.sock";
  Outcome r = run("env " + host, "-- echo ran");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.out.find("mayura-run: INTERNAL: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(options().state_dir + "-nobody.sock"), std::string::npos) << r.out;  // it names the address
  EXPECT_EQ(r.out.find("ran"), std::string::npos) << r.out;
  // --local ignores MAYURA_HOST
  r = run("env " + host, "--local -- echo ran");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "ran\n");
  r = run("env MAYURA_HOST=ftp://x", "-- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.out.rfind("mayura-run: INVALID_CONFIG: ", 0), 0u) << r.out;
}

// An engine whose open-file limit is low (a user's `ulimit -n 256`, hard and
// soft) still makes sandboxes, and their commands inherit that bound. (The
// init once moved its descriptors above fd 512, which such a limit forbids:
// it died unheard and every create failed "releasing the init: Broken pipe".)
// Without CAP_SYS_RESOURCE, as on hosts whose root lacks it: with it, the
// engine raises its own limit past the test's.
TEST_F(MayuraRunEngineTest, AnEngineUnderALowOpenFileLimitStillMakesSandboxes) {
  const Outcome r = run("setpriv --bounding-set=-sys_resource --inh-caps=-sys_resource prlimit --nofile=256:256 env",
                        "--local -- sh -c 'echo ran; ulimit -n'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "ran\n256\n");
}

// The default socket, /run/mayura/mayurad.sock: used when a daemon answers
// there, not when a dead one left it, and a user it refuses is told why.
TEST_F(MayuraRunEngineTest, TheDefaultSocketIsUsedWhenItAnswers) {
  const std::string socket = "/run/mayura/mayurad.sock";  // in the test's own /run/mayura
  ASSERT_FALSE(std::filesystem::exists(socket));
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const NativeOptions& o = options();
  const std::string config = o.state_dir + "-mayurad.json";
  std::ofstream(config) << daemon_config(o, socket, {{"socketMode", "0600"}}).dump();
  const pid_t daemon = start_mayurad(MAYURAD_PATH, config, true);
  ASSERT_TRUE(wait_until_served(socket));

  Outcome r = run("", "doctor");
  EXPECT_NE(r.out.find("\nruns: through mayurad at unix:///run/mayura/mayurad.sock\n"), std::string::npos) << r.out;
  // Through the daemon: its count of sandboxes made says so (the engine
  // settings in the environment are the daemon's own, so nothing else would).
  const auto creates = [&] {
    const std::string metrics = "curl -sS --unix-socket " + socket + " http://mayurad/metrics";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(metrics.c_str(), "r"), ::pclose);
    std::string text;
    char buffer[4096];
    for (std::size_t n; pipe && (n = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) text.append(buffer, n);
    const auto at = text.find("\nmayura_creates_total ");
    return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + 22);
  };
  const int before = creates();
  r = run("", "-- echo through");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "through\n");
  EXPECT_EQ(creates(), before + 1);
  // A user the socket refuses (mode 0600) is told so, rather than failing
  // later as a user who may not make sandboxes.
  r = run("setpriv --reuid=65534 --regid=65534 --clear-groups env", "-- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.out.find("mayura-run: PERMISSION_DENIED: mayurad's socket /run/mayura/mayurad.sock refuses this user"),
            std::string::npos)
      << r.out;

  stop_mayurad(daemon, o);
  // What a killed daemon leaves: a socket nobody listens on. Runs go on
  // in this process.
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
    std::filesystem::remove(socket);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  r = run("", "doctor");
  EXPECT_NE(r.out.find("\nruns: an engine in this process (no mayurad answers at /run/mayura/mayurad.sock)"),
            std::string::npos)
      << r.out;
  r = run("", "-- echo local");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "local\n");
  std::filesystem::remove(socket);
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace mayura::testing
