// mayura-run, as a user runs it.

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "../world/world.hpp"
#include "image_archives.hpp"

namespace mayura::testing {
namespace {

struct Outcome {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs mayura-run with `args` (a shell-quoted string) under the test's own
// engine options, passed through the environment the tool reads.
class MayuraRunTest : public NativeTest {
 protected:
  Outcome run(const std::string& args, const std::string& input = "", const std::string& env = "") {
    const std::string dir = options().state_dir + "-run";
    std::filesystem::create_directories(dir);
    const std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
    std::ofstream(in) << input;
    const std::string command = env + " MAYURA_STATE_DIR=" + options().state_dir + " MAYURA_CGROUP_ROOT=" +
                                options().cgroup_root + " MAYURA_ID_BASE=" + std::to_string(options().id_base) +
                                " MAYURA_ID_SLOTS=" + std::to_string(options().id_slots) + " MAYURA_IMAGE_DIR=" +
                                options().image_dir + " MAYURA_IMAGE_STORE=" + options().image_store + " " + MAYURA_RUN_PATH + " " + args + " <" + in + " >" + out +
                                " 2>" + err;
    const int raw = std::system(command.c_str());
    Outcome r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_host(out);
    r.err = read_host(err);
    std::filesystem::remove_all(dir);
    return r;
  }
};

TEST_F(MayuraRunTest, RunsACommandAndPassesItsExitStatus) {
  Outcome r = run("-- sh -c 'echo hello; echo oops >&2; exit 7'");
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_EQ(run("true").status, 0);
}

TEST_F(MayuraRunTest, TimeoutIs124) {
  Outcome r = run("--timeout 0.3 -- sh -c 'setsid sleep 100 & sleep 100'");
  EXPECT_EQ(r.status, 124);
}

TEST_F(MayuraRunTest, BadInputAndMissingImagesAre125WithTheReason) {
  Outcome r = run("--image /nonexistent -- true");
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.err.rfind("mayura-run: INVALID_CONFIG: ", 0), 0u) << r.err;
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

TEST_F(MayuraRunTest, JsonHasTheSeedsKeys) {
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

TEST_F(MayuraRunTest, EnvCopyInStdinAndCwd) {
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

TEST_F(MayuraRunTest, HelpAndVersion) {
  Outcome r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("usage: mayura-run"), std::string::npos);
  r = run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("mayura-run ", 0), 0u);
}

TEST_F(MayuraRunTest, VersionAndDoctorSayWhatTheCgroupsEnforce) {
  // What each layout of tests/vm (and this project's hybrid machines) has.
  const std::string layout = test_layout();
  std::string kind, enforces, placed;
  if (layout == "hybrid") {
    kind = "\ncgroups: hybrid (cgroup2 at /sys/fs/cgroup/unified";
    enforces = "enforces cpus [v1 /sys/fs/cgroup/cpu], memory (no swap) [v1 /sys/fs/cgroup/memory], pids [v1 /sys/fs/cgroup/pids]";
    placed = "\nsandboxes under /sys/fs/cgroup/unified/mayura (the engine runs in the root cgroup)\n";
  } else if (layout == "v1") {
    kind = "\ncgroups: legacy (cgroup v1 only; the engine mounts a cgroup2 of its own";
    enforces = "enforces cpus [v1 /sys/fs/cgroup/cpu,cpuacct], memory (no swap) [v1 /sys/fs/cgroup/memory], pids [v1 /sys/fs/cgroup/pids]";
    placed = "\nsandboxes under /run/mayura-cgroup2/mayura (the engine runs in the root cgroup)\n";
  } else {
    kind = "\ncgroups: unified (cgroup2 at /sys/fs/cgroup)";
    enforces = "enforces cpus [cgroup2], memory (no swap) [cgroup2], pids [cgroup2]";
    if (layout == "v2-root") {
      placed = "\nsandboxes under /sys/fs/cgroup/mayura (the engine runs in the root cgroup)\n";
    } else if (layout == "v2-delegated") {
      const std::string service = "/sys/fs/cgroup/system.slice/mayurad.service";
      placed = "\nsandboxes under " + service + "/mayura (the engine's delegated subtree " + service +
               "); the engine's processes in " + service + "/engine\n";
    } else {
      placed = "\nsandboxes under /sys/fs/cgroup/mayura (the top of the hierarchy; the engine's cgroup "
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

TEST_F(MayuraRunTest, LimitsReachTheCommand) {
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
}

TEST_F(MayuraRunTest, SeccompTakesAnOciProfileFile) {
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
  EXPECT_EQ(r.err.rfind("mayura-run: INVALID_INPUT: the seccomp profile is not usable", 0), 0u) << r.err;
  std::filesystem::remove(file);
}

TEST_F(MayuraRunTest, PortsArePublishedAndTheirUrlsPrinted) {
  // in a network namespace of the test's own: mayura-run listens on its 127.0.0.1
  enter_own_network_namespace();
  Outcome r = run("--port 8000 --port 9000 -- true");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("mayura-run: port 8000 is at http://127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mayura-run: port 9000 is at http://127.0.0.1:"), std::string::npos) << r.err;
  for (const char* bad : {"--port 0 -- true", "--port 70000 -- true", "--port x -- true", "--port 80 --port 80 -- true"}) {
    r = run(bad);
    EXPECT_EQ(r.status, 125) << bad;
    EXPECT_EQ(r.err.rfind("mayura-run: INVALID_INPUT: ", 0), 0u) << bad << ": " << r.err;
  }
}

TEST_F(MayuraRunTest, AllowAndNetworkAllReachTheWorldAndNothingElse) {
  // in a world of the test's own, whose DNS and range mayura-run is told of
  enter_own_network_namespace();
  World world;
  const std::string env = std::string("MAYURA_DNS_SERVERS=") + World::kDnsAddress + " MAYURA_PUBLIC_RANGES=203.0.113.0/24";
  Outcome r = run("--allow allowed.test --allow '*.allowed.test:8081' -- sh -c "
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

TEST_F(MayuraRunTest, ImageImportListRunInspectAndRemove) {
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
