// The command backend inside real native sandboxes: a transport that runs
// each short command with Sandbox::exec({"/bin/sh", "-c", command}), made a
// provider, and the whole contract exercised through create_sandboxes. One
// transport takes stdin; the other carries everything in command lines of
// at most 32 KiB.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>

#include "tests/support/command_backend_checks.hpp"
#include "tests/support/output_event.hpp"
#include "harness.hpp"
#include "mayura/command_backend.hpp"
#include "mayura/testing/conformance.hpp"

namespace mayura::testing {
namespace {

struct Variant {
  std::string name;
  bool takes_stdin = true;
  std::size_t max_command_bytes = 64 * 1024;
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

// Each command is one exec in the native sandbox.
class NativeTransport final : public CommandTransport {
 public:
  NativeTransport(Sandbox native, const Variant& variant) : native_(std::move(native)), variant_(variant) {}

  TransportResult run(const std::string& command, const TransportOptions& options) override {
    ++calls;
    // A transport that is not given what it cannot take: the backend must
    // keep to the bounds it declares.
    if (command.size() > variant_.max_command_bytes) {
      ADD_FAILURE() << "a command of " << command.size() << " bytes";
      throw SandboxError(Reason::INTERNAL, "command too long");
    }
    if (options.stdin && !variant_.takes_stdin) {
      ADD_FAILURE() << "stdin given to a transport that takes none";
      throw SandboxError(Reason::INTERNAL, "no stdin here");
    }
    ExecOptions o;
    o.stdin = options.stdin;
    o.cancellation = options.cancellation;
    const ExecResult r = native_.exec({"/bin/sh", "-c", command}, o);
    if (!r.exit_code) throw SandboxError(Reason::INTERNAL, "the transport's command did not end");
    return {*r.exit_code, r.stdout};
  }
  bool takes_stdin() const override { return variant_.takes_stdin; }
  std::size_t max_command_bytes() const override { return variant_.max_command_bytes; }

  std::atomic<int> calls{0};

 private:
  Sandbox native_;
  const Variant variant_;
};

// Sandboxes of the command backend, each over a native sandbox of the
// harness's provider; releasing one releases its native sandbox.
class CommandOverNative final : public SandboxProvider {
 public:
  CommandOverNative(Sandboxes native, const Variant& variant) : native_(std::move(native)), variant_(variant) {}

  std::string id() const override { return "command-over-native"; }
  Features features() const override {
    Features f;
    f.stdin = true;
    f.network = {NetworkKind::none};
    return f;
  }
  std::string workdir() const override { return native_.workdir(); }
  std::int64_t max_lifetime_ms() const override { return 0; }

  std::unique_ptr<SandboxBackend> create(const CreateOptions& options, std::stop_token cancellation) override {
    CreateOptions native_options;
    native_options.lifetime_ms = options.lifetime_ms;
    native_options.env = options.env;
    Sandbox native = native_.create(native_options, cancellation);
    {
      std::lock_guard lock(mutex_);
      last_native = native;
      last_transport = std::make_shared<NativeTransport>(native, variant_);
    }
    return command_sandbox_backend(id(), last_transport, [native] { native.release(); });
  }

  std::mutex mutex_;
  Sandbox last_native;
  std::shared_ptr<NativeTransport> last_transport;

 private:
  Sandboxes native_;
  const Variant variant_;
};

// The command backend's sandboxes, each over a native sandbox of the
// harness's provider; closed before the harness's leak check.
class CommandSandboxes {
 public:
  Sandbox create(const Sandboxes& native, const Variant& variant, CreateOptions create = {}) {
    if (!sandboxes) {
      provider = std::make_shared<CommandOverNative>(native, variant);
      SandboxesOptions limits;
      limits.max_sandboxes = 2;
      sandboxes = create_sandboxes(provider, limits);
    }
    if (create.lifetime_ms == 0) create.lifetime_ms = 120'000;
    return sandboxes->create(create);
  }
  void close() {
    if (sandboxes) sandboxes->close();
    sandboxes.reset();
    provider.reset();  // it holds the harness's sandboxes too
  }
  std::shared_ptr<CommandOverNative> provider;
  std::optional<Sandboxes> sandboxes;
};

class CommandBackend : public NativeTest, public ::testing::WithParamInterface<Variant> {
 protected:
  void TearDown() override {
    command_.close();
    NativeTest::TearDown();
  }

  Sandbox create_command(CreateOptions create = {}) {
    return command_.create(sandboxes(), GetParam(), std::move(create));
  }

  // Live processes in the native sandbox whose name is `name` (zombies are
  // dead: the init reaps them a moment later).
  int processes_named(const std::string& name) {
    return std::stoi(sh(command_.provider->last_native,
                        "n=0; for p in /proc/[0-9]*; do s=$(cat $p/stat 2>/dev/null) || continue; "
                        "case $s in *\"(" +
                            name + ") \"[!Z]*) n=$((n+1));; esac; done; echo $n"));
  }

  // The commands' directories (/tmp/.mayura-cmd-<tag>) in this /tmp listing.
  static int command_directories(const std::string& listing) {
    std::istringstream in(listing);
    int n = 0;
    for (std::string entry; std::getline(in, entry);) n += entry.starts_with(".mayura-cmd-") ? 1 : 0;
    return n;
  }
  // Those left in the native sandbox (sh fails the test if ls does, where a count in a pipeline would say 0).
  int command_directories_left() { return command_directories(sh(command_.provider->last_native, "ls -a /tmp")); }
  // The looks above, whose "none" a look that saw nothing would say too, see what is there: a running command's
  // own directory, and the shell that counts processes.
  void expect_the_looks_see(const Sandbox& s) {
    EXPECT_EQ(command_directories(command_checks::sh(s, "ls -a /tmp").stdout), 1);
    EXPECT_GE(processes_named("sh"), 1);
  }

  CommandSandboxes command_;
};

TEST_P(CommandBackend, ExitCodesAndStreams) { command_checks::exit_codes_and_streams(create_command()); }
TEST_P(CommandBackend, ArgumentsArriveUnchanged) { command_checks::arguments_arrive_unchanged(create_command()); }
TEST_P(CommandBackend, EnvCwdAndStdin) { command_checks::env_cwd_and_stdin(create_command()); }
TEST_P(CommandBackend, LargeOutputTruncationAndStreaming) {
  command_checks::large_output_truncation_and_streaming(create_command());
}
TEST_P(CommandBackend, BinaryLargeAndNestedFiles) { command_checks::binary_large_and_nested_files(create_command()); }
TEST_P(CommandBackend, ListingAndRemoval) { command_checks::listing_and_removal(create_command()); }
TEST_P(CommandBackend, ErrorsByReason) { command_checks::errors_by_reason(create_command()); }

TEST_P(CommandBackend, TimeoutKillsEveryProcessOfTheCommand) {
  auto s = create_command();
  command_checks::timeout_kills_every_process(s);
  // nothing of it is left anywhere in the sandbox, nor its directory
  EXPECT_EQ(processes_named("sleep"), 0);
  EXPECT_EQ(command_directories_left(), 0);
  expect_the_looks_see(s);
}

TEST_P(CommandBackend, CancellationKillsEveryProcessOfTheCommand) {
  auto s = create_command();
  command_checks::cancellation_kills_every_process(s);
  EXPECT_EQ(processes_named("sleep"), 0);
  EXPECT_EQ(command_directories_left(), 0);
  expect_the_looks_see(s);
}

TEST_P(CommandBackend, SandboxEnvReachesCommands) {
  CreateOptions o;
  o.env = {{"FROM_CREATE", "yes it's"}};
  auto s = create_command(o);
  EXPECT_EQ(command_checks::sh(s, "printf %s \"$FROM_CREATE\"").stdout, "yes it's");
}

TEST_P(CommandBackend, GoneAfterRelease) {
  auto s = create_command();
  EXPECT_EQ(s.exec({"true"}).exit_code, 0);
  Sandbox native = command_.provider->last_native;
  s.release();
  EXPECT_TRUE(native.released());  // the native sandbox went with it
  EXPECT_EQ(reason_of([&] { s.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.read_file("x"); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.write_file("x", "y"); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.list("."); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.remove("x"); }), Reason::GONE);
  // ports are not among the features
  EXPECT_FALSE(s.features().ports);
  EXPECT_EQ(reason_of([&] { s.url(8080); }), Reason::INVALID_INPUT);
}

TEST_P(CommandBackend, GoneWhenTheSandboxUnderneathEnds) {
  auto s = create_command();
  command_.provider->last_native.release();
  EXPECT_EQ(reason_of([&] { s.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.read_file("x"); }), Reason::GONE);
}

TEST_P(CommandBackend, ReleaseDuringAnExecEndsIt) {
  auto s = create_command();
  // Released only once the command said it runs and the test saw its sleep
  // in the sandbox underneath: a release before the command started would
  // prove nothing about ending it.
  OutputEvent out;
  int sleeping_before = 0;
  std::thread releaser([&] {
    if (out.wait_for("started\n", std::chrono::seconds(30))) sleeping_before = processes_named("sleep");
    s.release();
  });
  // The release is the event; an exec it misses ends at this timeout with a
  // result instead of GONE, and the check fails.
  ExecOptions o;
  o.timeout_ms = 60'000;
  o.on_stdout = out.sink();
  const std::string command =
      "sleep 1000 & until [ \"$(cat /proc/$!/comm 2>/dev/null)\" = sleep ]; do :; done; echo started; wait";
  EXPECT_EQ(reason_of([&] { s.exec({"sh", "-c", command}, o); }), Reason::GONE);
  releaser.join();
  EXPECT_GE(sleeping_before, 1) << "the command's sleep was not seen running before the release; it printed "
                                << out.seen();
}

TEST_P(CommandBackend, ManyCommandsAtOnce) {
  auto s = create_command();
  std::vector<std::thread> threads;
  threads.reserve(8);
  std::atomic<int> right{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      const ExecResult r = s.exec({"sh", "-c", "sleep 0.2; echo $1", "sh", std::to_string(i)});
      right += r.exit_code == 0 && r.stdout == std::to_string(i) + "\n";
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(right, 8);
}

INSTANTIATE_TEST_SUITE_P(Transports, CommandBackend,
                         ::testing::Values(Variant{"stdin", true, 64 * 1024}, Variant{"cmdline", false, 32 * 1024}),
                         [](const ::testing::TestParamInfo<Variant>& p) { return p.param.name; });

// The conformance suite, every entry on a sandbox of its own, over both
// transports: the command-only path proven against the same contract as the
// native provider.
class CommandConformance : public NativeTest, public ::testing::WithParamInterface<std::tuple<Variant, std::string>> {
 protected:
  void TearDown() override {
    command_.close();
    NativeTest::TearDown();
  }
  CommandSandboxes command_;
};

TEST_P(CommandConformance, Passes) {
  const Variant& variant = std::get<0>(GetParam());
  const std::string& name = std::get<1>(GetParam());
  const auto& suite = sandbox_conformance();
  const auto it = std::find_if(suite.begin(), suite.end(), [&](const ConformanceTest& t) { return t.name == name; });
  ASSERT_NE(it, suite.end());
  const Sandbox sandbox = command_.create(sandboxes(), variant);
  const std::string verdict = it->run({sandbox});
  // A shell over a transport has no way to stop a sandbox's processes, nor
  // disks to copy or keep.
  if (name == "pause_stops_and_resume_goes_on" || name == "disk_snapshot_restore_and_fork" ||
      name == "volume_kept_across_sandboxes" || name == "disk_io_bounded_or_refused") {
    EXPECT_TRUE(conformance_not_applicable(verdict)) << verdict;
  } else {
    EXPECT_EQ(verdict, kConformancePassed);
  }
}

std::vector<std::string> conformance_names() {
  std::vector<std::string> names;
  for (const auto& t : sandbox_conformance()) names.push_back(t.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Conformance, CommandConformance,
                         ::testing::Combine(::testing::Values(Variant{"stdin", true, 64 * 1024},
                                                              Variant{"cmdline", false, 32 * 1024}),
                                            ::testing::ValuesIn(conformance_names())),
                         [](const ::testing::TestParamInfo<std::tuple<Variant, std::string>>& p) {
                           return std::get<0>(p.param).name + "_" + std::get<1>(p.param);
                         });

}  // namespace
}  // namespace mayura::testing
