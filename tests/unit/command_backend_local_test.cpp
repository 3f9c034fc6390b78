// The command backend over shells on the host (dash, bash, BusyBox), with a
// transport that takes standard input and one that carries everything in
// short command lines. No root: each test has a directory of its own as
// the sandbox's workdir.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <filesystem>
#include <set>
#include <thread>

#include "tests/support/command_backend_checks.hpp"
#include "tests/support/output_event.hpp"
#include "mayura/command_backend.hpp"
#include "mayura/sandbox.hpp"
#include "shell_toolbox.hpp"

namespace mayura::testing {
namespace {

struct Variant {
  Toolbox toolbox;
  bool takes_stdin = true;
  std::size_t max_command_bytes = 64 * 1024;
  std::string name() const { return toolbox.name + (takes_stdin ? "_stdin" : "_cmdline"); }
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name(); }

std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (const auto& t : all_toolboxes()) {
    v.push_back({t, true});
    v.push_back({t, false, 32 * 1024});
  }
  return v;
}

// A provider whose sandboxes are the test's directory on the host.
class LocalProvider final : public SandboxProvider {
 public:
  LocalProvider(const ShellPlace& place, const Variant& variant) : place_(place), variant_(variant) {}
  std::string id() const override { return "local-command"; }
  Features features() const override {
    Features f;
    f.stdin = true;
    f.network = {NetworkKind::none};
    return f;
  }
  std::string workdir() const override { return place_.work(); }
  std::int64_t max_lifetime_ms() const override { return 0; }
  std::unique_ptr<SandboxBackend> create(const CreateOptions&, std::stop_token) override {
    transport = std::make_shared<LocalTransport>(place_, variant_.takes_stdin, variant_.max_command_bytes);
    return command_sandbox_backend(id(), transport, [this] { ++releases; });
  }

  std::shared_ptr<LocalTransport> transport;
  std::atomic<int> releases{0};

 private:
  const ShellPlace& place_;
  const Variant variant_;
};

class CommandBackendLocal : public ::testing::TestWithParam<Variant> {
 protected:
  void TearDown() override { sandboxes.close(); }

  ShellPlace place{GetParam().toolbox};
  std::shared_ptr<LocalProvider> provider = std::make_shared<LocalProvider>(place, GetParam());
  Sandboxes sandboxes = create_sandboxes(provider, {});
  Sandbox sandbox = sandboxes.create(long_lived());

  static CreateOptions long_lived() {
    CreateOptions o;
    o.lifetime_ms = 600'000;
    return o;
  }
};

TEST_P(CommandBackendLocal, ExitCodesAndStreams) { command_checks::exit_codes_and_streams(sandbox); }
TEST_P(CommandBackendLocal, ArgumentsArriveUnchanged) { command_checks::arguments_arrive_unchanged(sandbox); }
TEST_P(CommandBackendLocal, EnvCwdAndStdin) { command_checks::env_cwd_and_stdin(sandbox); }
TEST_P(CommandBackendLocal, LargeOutputTruncationAndStreaming) {
  command_checks::large_output_truncation_and_streaming(sandbox);
}
TEST_P(CommandBackendLocal, TimeoutKillsEveryProcess) { command_checks::timeout_kills_every_process(sandbox); }
TEST_P(CommandBackendLocal, CancellationKillsEveryProcess) {
  command_checks::cancellation_kills_every_process(sandbox);
}
TEST_P(CommandBackendLocal, BinaryLargeAndNestedFiles) { command_checks::binary_large_and_nested_files(sandbox); }
TEST_P(CommandBackendLocal, ListingAndRemoval) { command_checks::listing_and_removal(sandbox); }
TEST_P(CommandBackendLocal, ErrorsByReason) { command_checks::errors_by_reason(sandbox); }

TEST_P(CommandBackendLocal, EachCommandCleansUpItsDirectory) {
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sandbox.exec({"true"}).exit_code, 0);
  EXPECT_EQ(sandbox.exec({"sh", "-c", "head -c 3000000 /dev/zero"}).stdout.size(), 3'000'000u);
  ExecOptions o;
  o.timeout_ms = 100;
  EXPECT_TRUE(sandbox.exec({"sleep", "10"}, o).timed_out);
  std::stop_source stop;
  o.timeout_ms.reset();
  o.cancellation = stop.get_token();
  // cancelled once the command runs (it says so), so that its directory
  // exists when the cancellation comes
  OutputEvent out;
  o.on_stdout = out.sink();
  bool said_started = false;
  std::thread canceller([&] {
    said_started = out.wait_for("started\n");
    stop.request_stop();
  });
  EXPECT_EQ(reason_of([&] { sandbox.exec({"sh", "-c", "echo started; exec sleep 10"}, o); }), Reason::CANCELLED);
  canceller.join();
  EXPECT_TRUE(said_started) << out.seen();
  std::set<std::string> directories;
  const std::string prefix = "/tmp/.mayura-cmd-";
  for (const auto& head : provider->transport->command_heads()) {
    for (auto at = head.find(prefix); at != std::string::npos; at = head.find(prefix, at + 1)) {
      const auto end = head.find_first_not_of("0123456789abcdef", at + prefix.size());
      directories.insert(head.substr(at, end - at));
    }
  }
  EXPECT_EQ(directories.size(), 6u);
  for (const auto& d : directories) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

TEST_P(CommandBackendLocal, ReleaseOnceThenGone) {
  auto transport = std::make_shared<LocalTransport>(place, GetParam().takes_stdin, GetParam().max_command_bytes);
  int releases = 0;
  auto backend = command_sandbox_backend("local", transport, [&] { ++releases; });
  EXPECT_TRUE(backend->alive());
  EXPECT_EQ(backend->exec({"true"}, {}).exit_code, 0);
  EXPECT_EQ(reason_of([&] { backend->url(8080); }), Reason::UNSUPPORTED);
  backend->release();
  backend->release();
  EXPECT_EQ(releases, 1);
  EXPECT_FALSE(backend->alive());
  const int calls = transport->calls();
  EXPECT_EQ(reason_of([&] { backend->exec({"true"}, {}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { backend->read_file("x", {}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { backend->write_file("x", "y", {}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { backend->list(".", {}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { backend->remove("x", {}); }), Reason::GONE);
  EXPECT_EQ(transport->calls(), calls);  // nothing reached the transport
  backend.reset();
  EXPECT_EQ(releases, 1);

  // a backend dropped without release() is released as it goes
  auto dropped = command_sandbox_backend("local", transport, [&] { ++releases; });
  dropped.reset();
  EXPECT_EQ(releases, 2);

  // through the limits layer
  sandbox.release();
  EXPECT_EQ(provider->releases, 1);
  EXPECT_EQ(reason_of([&] { sandbox.exec({"true"}); }), Reason::GONE);
}

TEST_P(CommandBackendLocal, TransportCommandsStayWithinTheirBound) {
  // Everything the checks send stays under the bound: LocalTransport throws
  // otherwise. Here, the calls a plain command takes: the start (which polls
  // once, a moment later) and then polls only while the command runs. Every
  // answer before the last says it has no status yet, and the last gives it:
  // no call is made once the end is known (however many the host's speed
  // needed before).
  const std::size_t before = provider->transport->answer_heads().size();
  EXPECT_EQ(sandbox.exec({"true"}).exit_code, 0);
  const std::vector<std::string> all = provider->transport->answer_heads();
  const std::vector<std::string> answers(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  ASSERT_GE(answers.size(), 1u);
  for (std::size_t i = 0; i + 1 < answers.size(); ++i) {
    EXPECT_EQ(answers[i].substr(0, 2), "- ") << "answer " << i << " of " << answers.size() << ": " << answers[i];
  }
  EXPECT_EQ(answers.back().substr(0, 2), "0 ") << answers.back();
}

// A release during a transport call may kill that call's script midway (the
// native sandbox underneath kills every process at once): what it printed,
// or its exit code, is no answer to read, and the exec fails GONE, never
// INTERNAL for a malformed answer.
class KilledByRelease final : public CommandTransport {
 public:
  TransportResult run(const std::string&, const TransportOptions&) override {
    std::unique_lock lock(mutex_);
    running_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
    return {137, "half an answer"};
  }
  void wait_running() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return running_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool running_ = false;
  bool released_ = false;
};

TEST(CommandBackendRelease, AScriptTheReleaseKilledMakesTheCallGone) {
  auto transport = std::make_shared<KilledByRelease>();
  auto backend = command_sandbox_backend("killed", transport, [transport] { transport->release(); });
  auto exec = std::async(std::launch::async, [&] { return reason_of([&] { backend->exec({"true"}, {}); }); });
  transport->wait_running();
  backend->release();
  EXPECT_EQ(exec.get(), Reason::GONE);
}

INSTANTIATE_TEST_SUITE_P(Shells, CommandBackendLocal, ::testing::ValuesIn(all_variants()),
                         [](const ::testing::TestParamInfo<Variant>& p) { return p.param.name(); });

}  // namespace
}  // namespace mayura::testing
