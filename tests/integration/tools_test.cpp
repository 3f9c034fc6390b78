// Tools for agents over real sandboxes: each run's files stay its own, a
// run's end leaves nothing running, and the tools' bounds hold.

#include "harness.hpp"
#include "mayura/tools.hpp"

namespace mayura::testing {
namespace {

using nlohmann::json;

class ToolsTest : public NativeTest {
 protected:
  static RunContext run_of(const std::string& id, const std::vector<Tool>& tools) {
    RunContext run;
    run.run_id = id;
    for (const auto& t : tools)
      run.permissions.insert(t.definition.permissions.begin(), t.definition.permissions.end());
    return run;
  }
  static const Tool& tool(const std::vector<Tool>& tools, const std::string& id) {
    for (const auto& t : tools) {
      if (t.definition.id == id) return t;
    }
    throw std::runtime_error("no tool " + id);
  }
};

TEST_F(ToolsTest, EachRunHasASandboxOfItsOwnUntilItEnds) {
  options().prepared = 0;  // every process in the range is a run's
  auto per_run = sandbox_per_run(sandboxes(), [](const RunInfo&) {
    CreateOptions c;
    c.lifetime_ms = 60000;
    return c;
  });
  SandboxToolsOptions o;
  o.name = "ws";
  o.exec = o.write = true;
  const auto tools = sandbox_tools(per_run->source(), o);
  const RunContext a = run_of("a", tools), b = run_of("b", tools);
  tool(tools, "ws.write").call({{"path", "secret.txt"}, {"content", "only a's"}}, a);
  EXPECT_EQ(tool(tools, "ws.read").call({{"path", "secret.txt"}}, a)["content"], "only a's");
  EXPECT_EQ(reason_of([&] { tool(tools, "ws.read").call({{"path", "secret.txt"}}, b); }), Reason::NOT_FOUND);
  EXPECT_EQ(per_run->size(), 2u);
  tool(tools, "ws.exec").call({{"command", "setsid sleep 300 >/dev/null 2>&1 < /dev/null &"}}, a);
  per_run->release("a");
  EXPECT_TRUE(!processes_in_range(options()).empty());  // b's init is still there
  EXPECT_EQ(reason_of([&] { tool(tools, "ws.list").call(json::object(), a); }), Reason::GONE);
  per_run->release("b");
  EXPECT_EQ(processes_able_to_run(options()), std::vector<pid_t>{}) << "a run's process outlived its run";
  EXPECT_TRUE(eventually([&] { return processes_in_range(options()).empty(); }));
  EXPECT_EQ(sandboxes().size(), 0u);
}

TEST_F(ToolsTest, ACommandOverItsTimeoutIsStoppedWithEverythingItStarted) {
  CreateOptions c;
  c.lifetime_ms = 60000;
  const Sandbox s = create(c);
  SandboxToolsOptions o;
  o.exec = true;
  o.exec_timeout_ms = 500;
  const auto tools = sandbox_tools(s, o);
  const RunContext run = run_of("r", tools);
  const json r = tool(tools, "sandbox.exec").call({{"command", "sleep 100 & sleep 100"}}, run);
  EXPECT_TRUE(r["timedOut"].get<bool>());
  EXPECT_TRUE(r["exitCode"].is_null());
  const json ps = tool(tools, "sandbox.exec").call({{"command", "cat /proc/[0-9]*/comm | grep -c sleep"}}, run);
  EXPECT_EQ(ps["stdout"], "0\n") << ps.dump();
  EXPECT_EQ(reason_of([&] {
              tool(tools, "sandbox.exec").call({{"command", "true"}, {"timeoutMs", 501}}, run);
            }),
            Reason::INVALID_INPUT);
}

// An agent's later step reads what a command it left running printed
// meanwhile, types into it, signals it and stops it with all it started.
TEST_F(ToolsTest, AnAgentLeavesCommandsRunningAndComesBackToThem) {
  CreateOptions c;
  c.lifetime_ms = 60000;
  const Sandbox s = create(c);
  SandboxToolsOptions o;
  o.exec = o.background = true;
  o.exec_timeout_ms = 20000;
  const auto tools = sandbox_tools(s, o);
  const RunContext run = run_of("r", tools);
  const auto call = [&](const std::string& verb, const json& input) {
    return tool(tools, "sandbox." + verb).call(input, run);
  };
  const auto printed = [&](const std::string& id, const std::string& want) {
    return eventually([&] {
      return call("output", {{"id", id}})["data"].get<std::string>().find(want) != std::string::npos;
    });
  };

  // A REPL: it answers each line, and ends when its input does.
  const json repl =
      call("start", {{"command", "echo started; while read l; do echo \"got $l\"; done; echo bye >&2; exit 4"}});
  const std::string id = repl["id"];
  EXPECT_EQ(repl["state"], "running");
  EXPECT_EQ(repl["command"], "echo started; while read l; do echo \"got $l\"; done; echo bye >&2; exit 4");
  ASSERT_TRUE(printed(id, "started\n"));
  const json first = call("output", {{"id", id}});
  call("input", {{"id", id}, {"data", "hello\n"}});
  ASSERT_TRUE(eventually([&] {
    return call("output", {{"id", id}, {"from", first["next"]}})["data"] == "got hello\n";
  }));
  EXPECT_EQ(call("input", {{"id", id}, {"close", true}})["closed"], true);
  const json ended = call("wait", {{"id", id}, {"timeoutMs", 10000}});
  EXPECT_EQ(ended["state"], "exited") << ended.dump();
  EXPECT_EQ(ended["exitCode"], 4);
  EXPECT_EQ(call("output", {{"id", id}, {"stream", "stderr"}})["data"], "bye\n");

  // A trap sees the INT the model sends.
  const std::string trapped =
      call("start", {{"command", "trap 'echo int; exit 9' INT; echo ready; while :; do sleep 0.1; done"}})["id"];
  ASSERT_TRUE(printed(trapped, "ready\n"));
  call("signal", {{"id", trapped}, {"signal", "INT"}});
  EXPECT_EQ(call("wait", {{"id", trapped}, {"timeoutMs", 10000}})["exitCode"], 9);

  // A server with a child in its own session: stop ends both.
  const std::string server =
      call("start", {{"command", "setsid sleep 300 & echo up; sleep 300"}, {"timeoutMs", 60000}})["id"];
  ASSERT_TRUE(printed(server, "up\n"));
  EXPECT_EQ(call("wait", {{"id", server}, {"timeoutMs", 0}})["state"], "running");
  EXPECT_EQ(call("stop", {{"id", server}})["state"], "stopped");
  EXPECT_EQ(call("exec", {{"command", "cat /proc/[0-9]*/comm | grep -c sleep"}})["stdout"], "0\n");

  // Past its bound the newest bytes stay, and the gap is counted.
  const std::string flood = call("start", {{"command", "head -c 3000000 /dev/zero | tr '\\0' a"}})["id"];
  EXPECT_EQ(call("wait", {{"id", flood}, {"timeoutMs", 10000}})["exitCode"], 0);
  const json tail = call("output", {{"id", flood}});
  EXPECT_EQ(tail["offset"], 3000000 - o.max_output_bytes);
  EXPECT_EQ(tail["data"].get<std::string>().size(), o.max_output_bytes);
  const json oldest = call("output", {{"id", flood}, {"from", 0}, {"maxBytes", 10}});
  EXPECT_EQ(oldest["offset"], 3000000 - (1 << 20));
  EXPECT_EQ(oldest["dropped"], 3000000 - (1 << 20));
  EXPECT_EQ(oldest["data"], "aaaaaaaaaa");
  EXPECT_EQ(oldest["next"], 3000000 - (1 << 20) + 10);

  const json list = call("commands", json::object())["commands"];
  ASSERT_EQ(list.size(), 4u) << list.dump();
  EXPECT_EQ(list[0]["id"], id);
  EXPECT_EQ(list[2]["state"], "stopped");

  // Bad input, with its reason, and a run without the permission.
  EXPECT_EQ(reason_of([&] { call("output", {{"id", "c99"}}); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { call("output", {{"id", id}, {"stream", "both"}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { call("output", {{"id", id}, {"from", -1}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { call("signal", {{"id", id}, {"signal", "STOP"}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { call("input", {{"id", id}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { call("input", {{"id", id}, {"data", "late\n"}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { call("wait", {{"id", id}, {"timeoutMs", 20001}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { call("start", {{"command", "true"}, {"extra", 1}}); }), Reason::INVALID_INPUT);
  RunContext reader = run;
  reader.permissions.erase("effect:write");
  EXPECT_EQ(reason_of([&] {
              tool(tools, "sandbox.start").call({{"command", "true"}}, reader);
            }),
            Reason::PERMISSION_DENIED);
  EXPECT_EQ(call("commands", json::object())["commands"].size(), 4u);
}

}  // namespace
}  // namespace mayura::testing
