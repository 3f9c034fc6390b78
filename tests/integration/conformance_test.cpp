// The conformance suite against the native provider: each entry as a test of
// its own on a sandbox of its own; the whole suite on one sandbox, in turn
// and at once, as a provider's author would run it; and the suite's verdicts
// on providers that lack a feature or break the contract.

#include <algorithm>
#include <cctype>
#include <functional>
#include <thread>

#include "conformance_here.hpp"
#include "harness.hpp"
#include "mayura/testing/conformance.hpp"

namespace mayura::testing {
namespace {

const ConformanceTest& entry(const std::string& name) {
  const auto& suite = sandbox_conformance();
  const auto it = std::find_if(suite.begin(), suite.end(), [&](const ConformanceTest& t) { return t.name == name; });
  if (it == suite.end()) throw std::logic_error("no conformance test " + name);
  return *it;
}

std::vector<std::string> suite_names() {
  std::vector<std::string> names;
  for (const auto& t : sandbox_conformance()) names.push_back(t.name);
  return names;
}

std::vector<std::string> names_in(const std::vector<FileEntry>& entries) {
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

class NativeConformance : public NativeTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(NativeConformance, Passes) {
  const ConformanceTest& test = entry(GetParam());
  limits_.max_sandboxes = 8;  // the disk tests make four of their own
  const Sandbox sandbox = create();
  expect_conformance(test.name, test.run({sandbox, sandboxes()}));
}

INSTANTIATE_TEST_SUITE_P(Conformance, NativeConformance, ::testing::ValuesIn(suite_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

using ConformanceSuite = NativeTest;

TEST_F(ConformanceSuite, NamesAreUniqueAndUsableAsTestNames) {
  auto names = suite_names();
  ASSERT_FALSE(names.empty());
  for (const auto& name : names) {
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    })) << name;
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  // those that end their sandbox come last
  const auto& suite = sandbox_conformance();
  const auto first_ending =
      std::find_if(suite.begin(), suite.end(), [](const ConformanceTest& t) { return t.ends_sandbox; });
  EXPECT_TRUE(std::all_of(first_ending, suite.end(), [](const ConformanceTest& t) { return t.ends_sandbox; }));
}

// One sandbox for the whole list, in order, as the README shows (with the
// Sandboxes it came from, for the tests that make their own): no test
// depends on another's state, and none leaves anything in the workdir.
TEST_F(ConformanceSuite, InTurnOnOneSandbox) {
  limits_.max_sandboxes = 8;  // the disk tests make four of their own
  Sandbox sandbox = create();
  const auto before = names_in(sandbox.list());
  for (const auto& test : sandbox_conformance()) {
    if (test.ends_sandbox) continue;
    expect_conformance(test.name, test.run({sandbox, sandboxes()}));
  }
  EXPECT_EQ(names_in(sandbox.list()), before) << "the suite left something in the workdir";
  for (const auto& test : sandbox_conformance()) {
    if (!test.ends_sandbox) continue;
    if (sandbox.released()) sandbox = create();
    expect_conformance(test.name, test.run({sandbox, sandboxes()}));
  }
}

// Every test at once on one sandbox, as the header allows.
TEST_F(ConformanceSuite, AtOnceOnOneSandbox) {
  limits_.max_sandboxes = 8;  // the disk tests' four and the volume test's one, at once
  const Sandbox sandbox = create();
  const auto before = names_in(sandbox.list());
  std::vector<std::string> verdicts(sandbox_conformance().size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < sandbox_conformance().size(); ++i) {
    const auto& test = sandbox_conformance()[i];
    if (test.ends_sandbox) continue;
    threads.emplace_back([&, i] { verdicts[i] = test.run({sandbox, sandboxes()}); });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    if (sandbox_conformance()[i].ends_sandbox) continue;
    expect_conformance(sandbox_conformance()[i].name, verdicts[i]);
  }
  EXPECT_EQ(names_in(sandbox.list()), before) << "the suite left something in the workdir";
}

// A provider that forwards to another and changes what it says or does.
class Wrapped : public SandboxProvider {
 public:
  using Change = std::function<void(ExecResult&)>;
  Wrapped(std::shared_ptr<SandboxProvider> inner, bool stdin, Change change)
      : inner_(std::move(inner)), stdin_(stdin), change_(std::move(change)) {}
  std::string id() const override { return "wrapped-" + inner_->id(); }
  Features features() const override {
    Features f = inner_->features();
    f.stdin = stdin_;
    return f;
  }
  std::string workdir() const override { return inner_->workdir(); }
  std::int64_t max_lifetime_ms() const override { return inner_->max_lifetime_ms(); }
  std::unique_ptr<SandboxBackend> create(const CreateOptions& options, std::stop_token cancellation) override {
    return std::make_unique<Backend>(inner_->create(options, cancellation), change_);
  }

 private:
  class Backend : public SandboxBackend {
   public:
    Backend(std::unique_ptr<SandboxBackend> inner, Change change)
        : inner_(std::move(inner)), change_(std::move(change)) {}
    ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options) override {
      ExecResult r = inner_->exec(argv, options);
      if (change_) change_(r);
      return r;
    }
    std::string read_file(const std::string& path, const ReadOptions& o) override { return inner_->read_file(path, o); }
    void write_file(const std::string& path, std::string_view data, const FileOptions& o) override {
      inner_->write_file(path, data, o);
    }
    std::vector<FileEntry> list(const std::string& path, const FileOptions& o) override {
      return inner_->list(path, o);
    }
    void remove(const std::string& path, const FileOptions& o) override { inner_->remove(path, o); }
    std::string url(int port) override { return inner_->url(port); }
    void release() noexcept override { inner_->release(); }
    bool alive() const noexcept override { return inner_->alive(); }

   private:
    std::unique_ptr<SandboxBackend> inner_;
    Change change_;
  };

  std::shared_ptr<SandboxProvider> inner_;
  bool stdin_;
  Change change_;
};

// A feature the provider does not claim: the verdict says so (after checking
// the refusal the contract asks for), never "passed".
TEST_F(ConformanceSuite, AFeatureNotClaimedIsNotApplicable) {
  auto sandboxes = create_sandboxes(std::make_shared<Wrapped>(native_sandboxes(options()), false, nullptr), {});
  CreateOptions create;
  create.lifetime_ms = 120'000;
  const Sandbox sandbox = sandboxes.create(create);
  const std::string verdict = entry("exec_stdin").run({sandbox});
  EXPECT_TRUE(conformance_not_applicable(verdict)) << verdict;
  EXPECT_NE(verdict.find("INVALID_INPUT"), std::string::npos) << verdict;
  sandboxes.close();
}

// A provider that breaks the contract (stderr merged into stdout) fails, and
// the verdict says what differed.
TEST_F(ConformanceSuite, ABrokenProviderFailsWithWhatDiffered) {
  auto merge = [](ExecResult& r) {
    r.stdout += r.stderr;
    r.stderr.clear();
  };
  auto sandboxes = create_sandboxes(std::make_shared<Wrapped>(native_sandboxes(options()), true, merge), {});
  CreateOptions create;
  create.lifetime_ms = 120'000;
  const Sandbox sandbox = sandboxes.create(create);
  const std::string verdict = entry("exec_streams_apart").run({sandbox});
  EXPECT_EQ(verdict.rfind("stdout (only what went to stdout, in order): ", 0), 0u) << verdict;
  EXPECT_FALSE(conformance_not_applicable(verdict));
  sandboxes.close();
}

}  // namespace
}  // namespace mayura::testing
