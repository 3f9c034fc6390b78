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

}  // namespace
}  // namespace mayura::testing
