// Tools for agents and per-run sandboxes, over a provider that makes no
// sandbox: definitions, permissions (a refused call reaches nothing), input
// checks, output shaping, the run's budget, and one sandbox per run.

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <thread>

#include "tests/support/reason_of.hpp"
#include "fake_provider.hpp"
#include "mayura/tools.hpp"

namespace mayura {
namespace {

using nlohmann::json;
using testing::FakeProvider;
using testing::reason_of;

RunContext granted(const std::vector<std::string>& verbs, const std::string& name = "workspace") {
  RunContext run;
  run.run_id = "run-1";
  for (const auto& v : verbs) {
    run.permissions.insert("tool:" + name + "." + v);
    run.permissions.insert("sandbox:" + name + ":" + v);
  }
  run.permissions.insert("effect:read");
  run.permissions.insert("effect:write");
  return run;
}

class ToolsTest : public ::testing::Test {
 protected:
  ToolsTest() {
    SandboxesOptions o;
    o.max_sandboxes = 8;
    sandboxes = create_sandboxes(provider, o);
    CreateOptions c;
    c.lifetime_ms = 60000;
    sandbox = sandboxes.create(c);
  }
  const Tool& find(const std::vector<Tool>& tools, const std::string& id) {
    for (const auto& t : tools) {
      if (t.definition.id == id) return t;
    }
    ADD_FAILURE() << "no tool " << id;
    return tools.front();
  }
  std::shared_ptr<FakeProvider> provider = std::make_shared<FakeProvider>();
  Sandboxes sandboxes = create_sandboxes(provider, {});
  Sandbox sandbox;
};

TEST_F(ToolsTest, OnlyReadingIsOnByDefault) {
  SandboxToolsOptions o;
  o.name = "workspace";
  const auto tools = sandbox_tools(sandbox, o);
  std::vector<std::string> ids;
  ids.reserve(tools.size());
  for (const auto& t : tools) ids.push_back(t.definition.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"workspace.read", "workspace.list", "workspace.url"}));
  o.exec = o.write = o.remove = true;
  ids.clear();
  for (const auto& t : sandbox_tools(sandbox, o)) ids.push_back(t.definition.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"workspace.read", "workspace.list", "workspace.url", "workspace.exec",
                                           "workspace.write", "workspace.remove"}));
  o.exec = o.write = o.remove = false;
  o.background = true;
  ids.clear();
  std::vector<std::string> effects;
  for (const auto& t : sandbox_tools(sandbox, o)) {
    ids.push_back(t.definition.id);
    effects.emplace_back(tool_effect_name(t.definition.effect));
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"workspace.read", "workspace.list", "workspace.url", "workspace.start",
                                           "workspace.commands", "workspace.output", "workspace.input",
                                           "workspace.signal", "workspace.stop", "workspace.wait"}));
  EXPECT_EQ(effects, (std::vector<std::string>{"read", "read", "read", "write", "read", "read", "write", "write",
                                               "write", "read"}));
}

TEST_F(ToolsTest, DefinitionsAreReadyForAModelApi) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  const auto tools = sandbox_tools(sandbox, o);
  const ToolDefinition& exec = find(tools, "workspace.exec").definition;
  EXPECT_EQ(exec.name, "workspace_exec");
  EXPECT_EQ(exec.effect, ToolEffect::write);
  EXPECT_EQ(exec.permissions,
            (std::vector<std::string>{"tool:workspace.exec", "sandbox:workspace:exec", "effect:write"}));
  EXPECT_EQ(exec.input_schema["type"], "object");
  EXPECT_EQ(exec.input_schema["required"], json::array({"command"}));
  EXPECT_FALSE(exec.description.empty());
  const ToolDefinition& read = find(tools, "workspace.read").definition;
  EXPECT_EQ(read.effect, ToolEffect::read);
  EXPECT_EQ(read.permissions.back(), "effect:read");
  // every definition serializes, as a model API takes it
  for (const auto& t : tools)
    EXPECT_FALSE(json({{"name", t.definition.name}, {"parameters", t.definition.input_schema}}).dump().empty());
}

TEST_F(ToolsTest, ACallWithoutEveryPermissionIsRefusedAndReachesNoSandbox) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  const auto tools = sandbox_tools(sandbox, o);
  const Tool& exec = find(tools, "workspace.exec");
  for (const std::string missing : {"tool:workspace.exec", "sandbox:workspace:exec", "effect:write"}) {
    RunContext run = granted({"exec"});
    run.permissions.erase(missing);
    EXPECT_EQ(reason_of([&] { exec.call({{"command", "true"}}, run); }), Reason::PERMISSION_DENIED) << missing;
  }
  // another tools' grant is not this one's
  EXPECT_EQ(reason_of([&] {
              exec.call({{"command", "true"}}, granted({"exec"}, "other"));
            }),
            Reason::PERMISSION_DENIED);
  EXPECT_TRUE(provider->state->commands.empty());
  EXPECT_NO_THROW(exec.call({{"command", "true"}}, granted({"exec"})));
  ASSERT_EQ(provider->state->commands.size(), 1u);
  EXPECT_EQ(provider->state->commands[0], (std::vector<std::string>{"/bin/sh", "-c", "true"}));
}

TEST_F(ToolsTest, InputThatDoesNotFitTheSchemaIsInvalid) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = o.write = true;
  const auto tools = sandbox_tools(sandbox, o);
  const RunContext run = granted({"exec", "write", "read"});
  const Tool& exec = find(tools, "workspace.exec");
  for (const json& bad : {json("ls"), json::object(), json{{"command", 1}}, json{{"command", "ls"}, {"shell", "bash"}},
                          json{{"command", "ls"}, {"timeoutMs", 0}}, json{{"command", "ls"}, {"timeoutMs", 1e9}},
                          json{{"command", "ls"}, {"env", {{"A", 1}}}}}) {
    EXPECT_EQ(reason_of([&] { exec.call(bad, run); }), Reason::INVALID_INPUT) << bad.dump();
  }
  EXPECT_EQ(reason_of([&] {
              find(tools, "workspace.write").call({{"path", "a"}, {"content", "!!"}, {"encoding", "base64"}}, run);
            }),
            Reason::INVALID_INPUT);
  EXPECT_TRUE(provider->state->commands.empty());
}

TEST_F(ToolsTest, ExecOutputIsClippedInTheMiddleAndAlwaysValidText) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  o.max_output_bytes = 1000;
  provider->state->next_result = ExecResult{3,
                                            std::string(600, 'a') + std::string(5000, 'm') + std::string(600, 'z'),
                                            "bad \xff\xfe bytes \xe2\x82",
                                            false,
                                            12,
                                            false};
  const json r = find(sandbox_tools(sandbox, o), "workspace.exec").call({{"command", "x"}}, granted({"exec"}));
  EXPECT_EQ(r["exitCode"], 3);
  const std::string out = r["stdout"];
  EXPECT_LE(out.size(), 1100u);
  EXPECT_EQ(out.substr(0, 500), std::string(500, 'a'));
  EXPECT_EQ(out.substr(out.size() - 500), std::string(500, 'z'));
  EXPECT_NE(out.find("bytes left out"), std::string::npos) << out;
  EXPECT_TRUE(r["truncated"].get<bool>());
  EXPECT_EQ(r["stderr"], "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(r.dump().empty());  // serializes
}

// Names a sandbox makes that are no text come to the model as text (U+FFFD
// for each bad byte) and exactly (nameBase64); a listing longer than the
// output bound stops there and says how long it was.
TEST_F(ToolsTest, ListingsAreValidTextExactAndBounded) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.max_output_bytes = 4096;
  provider->state->listing = {FileEntry{"caf\xe9", FileType::file, 1, 0644, 0},
                              FileEntry{"two\nlines", FileType::file, 1, 0644, 0},
                              FileEntry{std::string(255, 'n'), FileType::directory, 0, 0755, 0}};
  json r = find(sandbox_tools(sandbox, o), "workspace.list").call(json::object(), granted({"list"}));
  ASSERT_EQ(r["entries"].size(), 3u);  // sorted by name's bytes
  EXPECT_EQ(r["entries"][0]["name"], "caf\xEF\xBF\xBD");
  EXPECT_EQ(r["entries"][0]["nameBase64"], "Y2Fm6Q==");
  EXPECT_EQ(r["entries"][1]["name"], std::string(255, 'n'));
  EXPECT_EQ(r["entries"][2]["name"], "two\nlines");
  EXPECT_FALSE(r["entries"][2].contains("nameBase64"));
  EXPECT_FALSE(r.contains("truncated"));
  EXPECT_FALSE(r.dump().empty());  // serializes

  provider->state->listing.assign(10000, FileEntry{"some-file-name", FileType::file, 1, 0644, 0});
  r = find(sandbox_tools(sandbox, o), "workspace.list").call(json::object(), granted({"list"}));
  EXPECT_EQ(r["truncated"], true);
  EXPECT_EQ(r["total"], 10000);
  EXPECT_GT(r["entries"].size(), 10u);
  EXPECT_LE(r["entries"].dump().size(), 4096u);
}

TEST_F(ToolsTest, EachCommandIsChargedToTheRunsBudget) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  o.exec_cost_micros = 400;
  const Tool exec = find(sandbox_tools(sandbox, o), "workspace.exec");
  RunContext run = granted({"exec"});
  run.budget = std::make_shared<RunBudget>(1000);
  EXPECT_NO_THROW(exec.call({{"command", "true"}}, run));
  EXPECT_NO_THROW(exec.call({{"command", "true"}}, run));
  EXPECT_EQ(reason_of([&] { exec.call({{"command", "true"}}, run); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(run.budget->remaining(), 200);
  EXPECT_EQ(provider->state->commands.size(), 2u);
}

TEST_F(ToolsTest, FilesAsTextOrBase64) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.write = true;
  o.max_write_bytes = 8;
  const auto tools = sandbox_tools(sandbox, o);
  const RunContext run = granted({"read", "write"});
  find(tools, "workspace.write").call({{"path", "f"}, {"content", "//8A"}, {"encoding", "base64"}}, run);
  EXPECT_EQ(provider->state->file_data, std::string("\xff\xff\x00", 3));
  json r = find(tools, "workspace.read").call({{"path", "f"}}, run);
  EXPECT_EQ(r["encoding"], "base64");
  EXPECT_EQ(r["content"], "//8A");
  provider->state->file_data = "héllo";
  r = find(tools, "workspace.read").call({{"path", "f"}}, run);
  EXPECT_EQ(r["encoding"], "utf8");
  EXPECT_EQ(r["content"], "héllo");
  EXPECT_EQ(reason_of([&] {
              find(tools, "workspace.write").call({{"path", "f"}, {"content", "123456789"}}, run);
            }),
            Reason::LIMIT_REACHED);
}

TEST_F(ToolsTest, ACallHasAnAsynchronousFormThatCancels) {
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  const Tool exec = find(sandbox_tools(sandbox, o), "workspace.exec");
  auto done = async_call(exec, {{"command", "true"}}, granted({"exec"}), sandboxes, boost::asio::use_future);
  EXPECT_EQ(done.get()["exitCode"], 0);
  provider->state->block_until_cancelled = true;
  boost::asio::cancellation_signal cancel;
  const std::size_t before = [&] {
    std::lock_guard lock(provider->state->mutex);
    return provider->state->commands.size();
  }();
  auto blocked = async_call(exec, {{"command", "sleep 100"}}, granted({"exec"}), sandboxes,
                            boost::asio::bind_cancellation_slot(cancel.slot(), boost::asio::use_future));
  // cancelled once the exec is blocked in the provider, which must see it
  ASSERT_TRUE(provider->state->wait_for_commands(before + 1));
  cancel.emit(boost::asio::cancellation_type::terminal);
  EXPECT_EQ(reason_of([&] { blocked.get(); }), Reason::CANCELLED);
  std::lock_guard lock(provider->state->mutex);
  EXPECT_EQ(provider->state->blocked_then_cancelled, 1);
}

TEST_F(ToolsTest, BadOptionsAreInvalid) {
  SandboxToolsOptions o;
  o.name = "has space";
  EXPECT_EQ(reason_of([&] { sandbox_tools(sandbox, o); }), Reason::INVALID_INPUT);
  o.name = "ok";
  o.exec_timeout_ms = 0;
  EXPECT_EQ(reason_of([&] { sandbox_tools(sandbox, o); }), Reason::INVALID_INPUT);
}

TEST_F(ToolsTest, APerRunSandboxIsCreatedOnceOnFirstUseAndReleasedAtTheEnd) {
  auto per_run = sandbox_per_run(sandboxes, [](const RunInfo& info) {
    CreateOptions c;
    c.lifetime_ms = 60000;
    c.labels = {{"run", info.run_id}};
    return c;
  });
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  const auto tools = sandbox_tools(per_run->source(), o);
  const int before = provider->state->creates;  // the fixture's own sandbox
  EXPECT_EQ(per_run->size(), 0u);               // nothing until a tool needs it
  std::vector<std::thread> racers;
  racers.reserve(8);
  for (int i = 0; i < 8; ++i) {
    racers.emplace_back([&] { find(tools, "workspace.exec").call({{"command", "true"}}, granted({"exec"})); });
  }
  for (auto& t : racers) t.join();
  EXPECT_EQ(provider->state->creates - before, 1);
  EXPECT_EQ(per_run->size(), 1u);
  RunContext other = granted({"exec"});
  other.run_id = "run-2";
  find(tools, "workspace.exec").call({{"command", "true"}}, other);
  EXPECT_EQ(provider->state->creates - before, 2);
  per_run->release("run-1");
  per_run->release("run-1");  // again: nothing more
  EXPECT_EQ(provider->state->releases, 1);
  // A late call of an ended run makes no new sandbox.
  EXPECT_EQ(reason_of([&] {
              find(tools, "workspace.exec").call({{"command", "true"}}, granted({"exec"}));
            }),
            Reason::GONE);
  EXPECT_EQ(provider->state->creates - before, 2);
  per_run->on_finally()("run-2");
  EXPECT_EQ(provider->state->releases, 2);
  EXPECT_EQ(per_run->size(), 0u);
}

TEST_F(ToolsTest, ARefusedCallMakesNoPerRunSandbox) {
  auto per_run = sandbox_per_run(sandboxes, [](const RunInfo&) {
    CreateOptions c;
    c.lifetime_ms = 60000;
    return c;
  });
  SandboxToolsOptions o;
  o.name = "workspace";
  o.exec = true;
  const auto tools = sandbox_tools(per_run->source(), o);
  const int before = provider->state->creates;
  RunContext run = granted({"exec"});
  run.permissions.erase("effect:write");
  EXPECT_EQ(reason_of([&] {
              find(tools, "workspace.exec").call({{"command", "true"}}, run);
            }),
            Reason::PERMISSION_DENIED);
  // nor does input that does not fit
  EXPECT_EQ(reason_of([&] {
              find(tools, "workspace.exec").call({{"command", 1}}, granted({"exec"}));
            }),
            Reason::INVALID_INPUT);
  EXPECT_EQ(provider->state->creates, before);
  EXPECT_EQ(per_run->size(), 0u);
}

TEST_F(ToolsTest, ARunScopeReleasesOnEveryWayOut) {
  auto per_run = sandbox_per_run(sandboxes, [](const RunInfo&) {
    CreateOptions c;
    c.lifetime_ms = 60000;
    return c;
  });
  const auto tools = sandbox_tools(per_run->source(), SandboxToolsOptions{});
  try {
    const auto scope = run_scope(per_run, "run-1");
    RunContext run;
    run.run_id = "run-1";
    run.permissions = {"tool:sandbox.list", "sandbox:sandbox:list", "effect:read"};
    find(tools, "sandbox.list").call(json::object(), run);
    throw std::runtime_error("the run failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(provider->state->releases, 1);
  EXPECT_EQ(per_run->size(), 0u);
}

}  // namespace
}  // namespace mayura
