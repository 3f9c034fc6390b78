// The limits layer, against a provider that makes no sandbox.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "fake_provider.hpp"
#include "mayura/sandbox.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura {
namespace {

using testing::reason_of;

using testing::FakeProvider;

struct Fixture : ::testing::Test {
  std::shared_ptr<FakeProvider> provider = std::make_shared<FakeProvider>();
  Sandboxes make(SandboxesOptions o = {}) { return create_sandboxes(provider, std::move(o)); }
  static CreateOptions opts(std::int64_t lifetime = 60'000) {
    CreateOptions c;
    c.lifetime_ms = lifetime;
    return c;
  }
};

TEST_F(Fixture, CreateNeedsALifetimeWithinTheMaximum) {
  SandboxesOptions o;
  o.max_lifetime_ms = 1000;
  auto s = make(o);
  EXPECT_EQ(reason_of([&] { s.create(opts(0)); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.create(opts(1001)); }), Reason::INVALID_INPUT);
  EXPECT_EQ(provider->state->creates, 0);
  EXPECT_NO_THROW(s.create(opts(1000)));
}

TEST_F(Fixture, NetworkKindsMustBeListed) {
  auto s = make();  // only none listed
  auto c = opts();
  c.network = Network::all();
  EXPECT_EQ(reason_of([&] { s.create(c); }), Reason::PERMISSION_DENIED);
  c.network = Network::allow_only({"example.com"});
  std::string message;
  EXPECT_EQ(reason_of([&] { s.create(c); }, &message), Reason::PERMISSION_DENIED);
  // Said for whoever can list it: the library's option and mayurad's setting.
  EXPECT_NE(message.find("create_sandboxes' network option"), std::string::npos) << message;
  EXPECT_NE(message.find(R"("network": ["none", "allow"] in mayurad.json)"), std::string::npos) << message;
  c.network = Network::allow_only({"*.com"});
  EXPECT_EQ(reason_of([&] { s.create(c); }), Reason::INVALID_INPUT);
  EXPECT_EQ(provider->state->creates, 0);

  SandboxesOptions o;
  o.network = {NetworkKind::none, NetworkKind::all};
  auto t = make(o);
  c.network = Network::all();
  EXPECT_NO_THROW(t.create(c));
}

TEST_F(Fixture, FeaturesTheProviderLacksAreInvalidInputBeforeAnythingIsCreated) {
  Features f;
  f.network = {NetworkKind::none};
  auto limited = std::make_shared<FakeProvider>(f);
  SandboxesOptions o;
  auto s = create_sandboxes(limited, o);
  auto c = opts();
  c.ports = {3000};
  EXPECT_EQ(reason_of([&] { s.create(c); }), Reason::INVALID_INPUT);
  c = opts();
  c.cpus = 2;
  EXPECT_EQ(reason_of([&] { s.create(c); }), Reason::INVALID_INPUT);
  c = opts();
  c.memory_mib = 512;
  EXPECT_EQ(reason_of([&] { s.create(c); }), Reason::INVALID_INPUT);
  EXPECT_EQ(limited->state->creates, 0);
  // listing a kind the provider cannot enforce is refused up front
  o.network = {NetworkKind::none, NetworkKind::all};
  EXPECT_EQ(reason_of([&] { create_sandboxes(limited, o); }), Reason::INVALID_INPUT);
  // a provider without none: the default fails INVALID_INPUT instead of going online
  Features online;
  online.network = {NetworkKind::all};
  SandboxesOptions only_all;
  only_all.network = {NetworkKind::all};
  auto fly = create_sandboxes(std::make_shared<FakeProvider>(online), only_all);
  EXPECT_EQ(reason_of([&] { fly.create(opts()); }), Reason::INVALID_INPUT);
}

// The operator's ceilings: a create over one is refused naming it, before
// the provider sees anything; one at a ceiling, or asking for nothing, goes.
TEST_F(Fixture, CreatesOverTheOperatorsCeilingsAreRefusedNamingThem) {
  Features bounded = FakeProvider::default_features();
  bounded.cpus = bounded.memory = bounded.pids = true;
  provider = std::make_shared<FakeProvider>(bounded);
  SandboxesOptions o;
  o.max_sandboxes = 4;
  o.max_cpus = 2;
  o.max_memory_mib = 1024;
  o.max_pids = 100;
  o.max_ports = 2;
  auto s = make(o);
  const auto refused = [&](const CreateOptions& c, const std::string& names) {
    std::string message;
    EXPECT_EQ(reason_of([&] { s.create(c); }, &message), Reason::INVALID_INPUT) << names;
    EXPECT_NE(message.find(names), std::string::npos) << message;
  };
  auto c = opts();
  c.cpus = 2.5;
  refused(c, "max_cpus");
  c = opts();
  c.memory_mib = 1025;
  refused(c, "maxMemoryMiB");
  c = opts();
  c.pids = 101;
  refused(c, "max_pids");
  c = opts();
  c.ports = {3000, 3001, 3002};
  refused(c, "maxPorts");
  EXPECT_EQ(provider->state->creates, 0);
  c = opts();
  c.cpus = 2;
  c.memory_mib = 1024;
  c.pids = 100;
  c.ports = {3000, 3001};
  EXPECT_NO_THROW(s.create(c));
  EXPECT_NO_THROW(s.create(opts()));
  EXPECT_EQ(provider->state->creates, 2);
  o.max_cpus = -1;
  EXPECT_EQ(reason_of([&] { make(o); }), Reason::INVALID_INPUT);
}

TEST_F(Fixture, CountIsBoundedAndReleaseFreesASlot) {
  SandboxesOptions o;
  o.max_sandboxes = 2;
  auto s = make(o);
  auto a = s.create(opts());
  auto b = s.create(opts());
  EXPECT_EQ(reason_of([&] { s.create(opts()); }), Reason::LIMIT_REACHED);
  a.release();
  EXPECT_NO_THROW(s.create(opts()));
}

TEST_F(Fixture, CallsAfterReleaseAreGone) {
  auto s = make();
  auto sb = s.create(opts());
  sb.release();
  sb.release();  // idempotent
  EXPECT_EQ(provider->state->releases, 1);
  EXPECT_EQ(reason_of([&] { sb.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { sb.read_file("a"); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { sb.write_file("a", "b"); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { sb.list("."); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { sb.remove("a"); }), Reason::GONE);
}

TEST_F(Fixture, CloseReleasesEverythingAndRefusesNewSandboxes) {
  SandboxesOptions o;
  o.max_sandboxes = 3;
  auto s = make(o);
  auto a = s.create(opts());
  auto b = s.create(opts());
  s.close();
  EXPECT_EQ(provider->state->releases, 2);
  EXPECT_EQ(reason_of([&] { s.create(opts()); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { a.exec({"true"}); }), Reason::GONE);
}

TEST_F(Fixture, LifetimeEndMakesCallsGone) {
  auto s = make();
  // A lifetime is a span of the clock from create: the event is its end.
  // Before it the sandbox answers; once it is over (waited for, never
  // raced) calls fail GONE and the provider's sandbox has been released.
  auto sb = s.create(opts(500));
  const auto created = std::chrono::steady_clock::now();  // the lifetime began before this
  EXPECT_EQ(sb.exec({"true"}).exit_code, 0);
  EXPECT_EQ(s.size(), 1u);
  std::this_thread::sleep_until(created + std::chrono::milliseconds(500));
  EXPECT_EQ(reason_of([&] { sb.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(provider->state->releases, 1);
}

TEST_F(Fixture, BadArgumentsNeverReachTheProvider) {
  auto s = make();
  auto sb = s.create(opts());
  EXPECT_EQ(reason_of([&] { sb.exec({}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sb.read_file(std::string("a\0b", 3)); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sb.write_file("", "x"); }), Reason::INVALID_INPUT);
  ExecOptions e;
  e.timeout_ms = 0;
  EXPECT_EQ(reason_of([&] { sb.exec({"true"}, e); }), Reason::INVALID_INPUT);
  e = {};
  e.env = {{"BAD=NAME", "x"}};
  EXPECT_EQ(reason_of([&] { sb.exec({"true"}, e); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { sb.url(3000); }), Reason::INVALID_INPUT);  // not asked for at create
  EXPECT_TRUE(provider->state->commands.empty());
}

TEST_F(Fixture, ProviderResultsAreCheckedAndBounded) {
  SandboxesOptions o;
  o.max_output_bytes = 4;
  auto s = make(o);
  auto sb = s.create(opts());
  provider->state->next_result = {0, "0123456789", "", false, 1, false};
  auto r = sb.exec({"x"});
  EXPECT_EQ(r.stdout, "0123");
  EXPECT_TRUE(r.truncated);
  provider->state->next_result = {std::nullopt, "", "", false, 1, false};
  EXPECT_EQ(reason_of([&] { sb.exec({"x"}); }), Reason::INTERNAL);
  provider->state->next_result = {7, "", "", false, 1, true};
  r = sb.exec({"x"});
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exit_code.has_value());
  provider->state->listing = {{"../escape", FileType::file, 1, 0644, 0}};
  EXPECT_EQ(reason_of([&] { sb.list("."); }), Reason::INTERNAL);
}

TEST_F(Fixture, ForeignProviderErrorsBecomeInternalWithoutTheirText) {
  auto s = make();
  auto sb = s.create(opts());
  provider->state->throw_foreign = true;
  try {
    sb.exec({"x"});
    FAIL();
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.reason(), Reason::INTERNAL);
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos);
  }
}

TEST_F(Fixture, ReadsAreBounded) {
  SandboxesOptions o;
  o.max_read_bytes = 3;
  o.max_write_bytes = 3;
  auto s = make(o);
  auto sb = s.create(opts());
  provider->state->file_data = "four";
  EXPECT_EQ(reason_of([&] { sb.read_file("a"); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(reason_of([&] { sb.write_file("a", "four"); }), Reason::LIMIT_REACHED);
}

TEST_F(Fixture, DroppingTheLastHandleReleases) {
  auto s = make();
  { auto sb = s.create(opts()); }
  EXPECT_EQ(provider->state->releases, 1);
}

TEST_F(Fixture, ManyThreadsCreateAndExecAtOnce) {
  SandboxesOptions o;
  o.max_sandboxes = 4;
  auto s = make(o);
  // Each thread that has a sandbox holds it until every thread has had its
  // create answered: exactly the bound's worth alive at once, and every
  // other create refused while they are, so neither a bound not held (5
  // made) nor one held too tight (fewer made) passes.
  std::mutex mutex;
  std::condition_variable changed;
  int answered = 0;
  bool let_go = false;
  std::atomic<int> ok{0}, limited{0}, other{0};
  std::vector<std::thread> threads;
  threads.reserve(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      std::optional<Sandbox> sb;
      try {
        sb.emplace(s.create(opts()));
        sb->exec({"x"});
        ++ok;
      } catch (const SandboxError& e) {
        ++(e.reason() == Reason::LIMIT_REACHED ? limited : other);
      }
      std::unique_lock lock(mutex);
      ++answered;
      changed.notify_all();
      changed.wait(lock, [&] { return let_go; });
    });
  }
  {
    std::unique_lock lock(mutex);
    EXPECT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return answered == 16; })) << answered;
  }
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(limited.load(), 12);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(s.size(), 4u);
  {
    std::lock_guard lock(provider->state->mutex);
    EXPECT_EQ(provider->state->creates - provider->state->releases, 4);
  }
  {
    std::lock_guard lock(mutex);
    let_go = true;
  }
  changed.notify_all();
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(provider->state->releases, 4);
}

}  // namespace
}  // namespace mayura
