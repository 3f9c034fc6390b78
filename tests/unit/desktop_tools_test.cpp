// The desktop's tools, over a provider that makes no sandbox: the
// definitions tell the model the screen, permissions are checked before
// anything, the model's input becomes exactly the action it asked for, and
// a screenshot comes back as the image block model APIs take.

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/reason_of.hpp"
#include "fake_provider.hpp"
#include "mayura/tools.hpp"

namespace mayura {
namespace {

using nlohmann::json;
using testing::FakeProvider;
using testing::reason_of;

const std::vector<std::string> kVerbs = {"screenshot", "cursor", "click", "move", "drag", "scroll", "type", "key"};

RunContext screen_granted(const std::vector<std::string>& verbs) {
  RunContext run;
  run.run_id = "run-1";
  for (const auto& v : verbs) {
    run.permissions.insert("tool:screen." + v);
    run.permissions.insert("sandbox:screen:" + v);
  }
  run.permissions.insert("effect:read");
  run.permissions.insert("effect:write");
  return run;
}

class DesktopToolsTest : public ::testing::Test {
 protected:
  DesktopToolsTest() {
    Features f = FakeProvider::default_features();
    f.desktop = true;
    provider = std::make_shared<FakeProvider>(f);
    SandboxesOptions limits;
    limits.max_sandboxes = 4;
    sandboxes = create_sandboxes(provider, limits);
    CreateOptions c;
    c.lifetime_ms = 60000;
    c.desktop = DesktopSize{1024, 768};
    sandbox = sandboxes.create(c);
    SandboxToolsOptions o;
    o.name = "screen";
    o.read = false;
    o.desktop = true;
    tools = sandbox_tools(sandbox, o);
  }
  const Tool& tool(const std::string& verb) const {
    for (const auto& t : tools) {
      if (t.definition.id == "screen." + verb) return t;
    }
    throw std::runtime_error("no tool " + verb);
  }
  std::vector<DesktopAction> actions() const {
    std::lock_guard lock(provider->state->mutex);
    return provider->state->desktop_actions;
  }
  std::shared_ptr<FakeProvider> provider;
  Sandboxes sandboxes = create_sandboxes(std::make_shared<FakeProvider>(), {});
  Sandbox sandbox;
  std::vector<Tool> tools;
};

TEST_F(DesktopToolsTest, EachVerbIsAToolWithItsEffectAndTheScreenInItsDefinition) {
  std::vector<std::string> ids;
  ids.reserve(tools.size());
  for (const auto& t : tools) ids.push_back(t.definition.id);
  std::vector<std::string> expected;
  expected.reserve(kVerbs.size());
  for (const auto& v : kVerbs) expected.push_back("screen." + v);
  EXPECT_EQ(ids, expected);
  for (const std::string read : {"screenshot", "cursor"}) EXPECT_EQ(tool(read).definition.effect, ToolEffect::read);
  for (const std::string write : {"click", "move", "drag", "scroll", "type", "key"}) {
    EXPECT_EQ(tool(write).definition.effect, ToolEffect::write) << write;
    EXPECT_EQ(tool(write).definition.permissions,
              (std::vector<std::string>{"tool:screen." + write, "sandbox:screen:" + write, "effect:write"}));
  }
  // The sandbox's own screen, 1024x768, in words and in the schema's bounds.
  for (const std::string verb : {"screenshot", "click", "move", "drag", "scroll"}) {
    EXPECT_NE(tool(verb).definition.description.find("1024x768"), std::string::npos) << verb;
  }
  const json& click = tool("click").definition.input_schema;
  EXPECT_EQ(click["properties"]["x"]["maximum"], 1023);
  EXPECT_EQ(click["properties"]["y"]["maximum"], 767);
  EXPECT_EQ(click["required"], json::array({"x", "y"}));
  EXPECT_EQ(tool("screenshot").definition.input_schema["properties"]["region"]["properties"]["width"]["maximum"], 1024);
}

TEST_F(DesktopToolsTest, ACallWithoutItsPermissionReachesNoDesktop) {
  for (const std::string& verb : kVerbs) {
    RunContext run = screen_granted(kVerbs);
    run.permissions.erase("tool:screen." + verb);
    EXPECT_EQ(reason_of([&] { tool(verb).call({{"x", 1}, {"y", 1}}, run); }), Reason::PERMISSION_DENIED) << verb;
  }
  RunContext read_only = screen_granted(kVerbs);
  read_only.permissions.erase("effect:write");
  EXPECT_EQ(reason_of([&] { tool("click").call({{"x", 1}, {"y", 1}}, read_only); }), Reason::PERMISSION_DENIED);
  EXPECT_NO_THROW(tool("screenshot").call(json::object(), read_only));
  ASSERT_EQ(actions().size(), 1u);
  EXPECT_EQ(actions()[0].kind, DesktopAction::Kind::screenshot);
}

TEST_F(DesktopToolsTest, TheModelsInputBecomesExactlyItsAction) {
  const RunContext run = screen_granted(kVerbs);
  EXPECT_EQ(tool("click").call({{"x", 10}, {"y", 20}, {"button", "right"}, {"count", 2}}, run),
            (json{{"x", 10}, {"y", 20}, {"button", "right"}, {"count", 2}}));
  tool("move").call({{"x", 1023}, {"y", 767}}, run);
  tool("drag").call({{"path", {{{"x", 1}, {"y", 2}}, {{"x", 3}, {"y", 4}}, {{"x", 5}, {"y", 6}}}}}, run);
  tool("scroll").call({{"x", 7}, {"y", 8}, {"direction", "left"}, {"amount", 3}}, run);
  tool("type").call({{"text", "héllo\n"}}, run);
  tool("key").call({{"keys", "ctrl+a Delete"}}, run);
  EXPECT_EQ(tool("cursor").call(json::object(), run), (json{{"x", 5}, {"y", 6}}));
  const auto a = actions();
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[0].kind, DesktopAction::Kind::click);
  EXPECT_EQ(a[0].points, (std::vector<Point>{{10, 20}}));
  EXPECT_EQ(a[0].button, MouseButton::right);
  EXPECT_EQ(a[0].count, 2);
  EXPECT_EQ(a[1].kind, DesktopAction::Kind::move);
  EXPECT_EQ(a[1].points, (std::vector<Point>{{1023, 767}}));
  EXPECT_EQ(a[2].kind, DesktopAction::Kind::drag);
  EXPECT_EQ(a[2].points, (std::vector<Point>{{1, 2}, {3, 4}, {5, 6}}));
  EXPECT_EQ(a[3].kind, DesktopAction::Kind::scroll);
  EXPECT_EQ(a[3].direction, ScrollDirection::left);
  EXPECT_EQ(a[3].amount, 3);
  EXPECT_EQ(a[4].kind, DesktopAction::Kind::type);
  EXPECT_EQ(a[4].text, "héllo\n");
  EXPECT_EQ(a[5].kind, DesktopAction::Kind::key);
  EXPECT_EQ(a[5].text, "ctrl+a Delete");
  EXPECT_EQ(a[6].kind, DesktopAction::Kind::cursor);
}

TEST_F(DesktopToolsTest, AScreenshotIsTheImageBlockModelApisTake) {
  const json image =
      tool("screenshot")
          .call({{"region", {{"x", 4}, {"y", 5}, {"width", 6}, {"height", 7}}}}, screen_granted({"screenshot"}));
  EXPECT_EQ(image["type"], "image");
  EXPECT_EQ(image["source"]["type"], "base64");
  EXPECT_EQ(image["source"]["media_type"], "image/png");
  // "\x89PNG\r\n\x1a\npixels" in base64
  EXPECT_EQ(image["source"]["data"], "iVBORw0KGgpwaXhlbHM=");
  ASSERT_EQ(actions().size(), 1u);
  ASSERT_TRUE(actions()[0].region);
  EXPECT_EQ(actions()[0].region->x, 4);
  EXPECT_EQ(actions()[0].region->height, 7);
}

TEST_F(DesktopToolsTest, InputOffTheScreenOrOutOfTheSchemaIsInvalidAndReachesNothing) {
  const RunContext run = screen_granted(kVerbs);
  const std::vector<std::pair<std::string, json>> bad = {
      {"click", {{"x", 1024}, {"y", 0}}},
      {"click", {{"x", -1}, {"y", 0}}},
      {"click", {{"x", 1}}},
      {"click", {{"x", 1}, {"y", 1}, {"button", "fourth"}}},
      {"click", {{"x", 1}, {"y", 1}, {"count", 4}}},
      {"click", {{"x", 1}, {"y", 1}, {"z", 1}}},
      {"move", {{"x", "1"}, {"y", 1}}},
      {"drag", {{"path", {{{"x", 1}, {"y", 2}}}}}},
      {"drag", {{"path", "1,2 3,4"}}},
      {"drag", {{"path", {{{"x", 1}, {"y", 2}}, {{"x", 1}, {"y", 768}}}}}},
      {"scroll", {{"x", 1}, {"y", 1}, {"direction", "sideways"}}},
      {"scroll", {{"x", 1}, {"y", 1}, {"direction", "up"}, {"amount", 0}}},
      {"type", {{"text", ""}}},
      {"type", {{"text", std::string(kMaxDesktopTextBytes + 1, 'a')}}},
      {"key", {{"keys", ""}}},
      {"screenshot", {{"region", {{"x", 1000}, {"y", 0}}}}},
      {"screenshot", {{"region", {{"x", 1000}, {"y", 0}, {"width", 100}, {"height", 1}}}}},
      {"cursor", {{"x", 1}}},
  };
  for (const auto& entry : bad) {
    const std::string& verb = entry.first;
    const json& input = entry.second;
    EXPECT_EQ(reason_of([&] { tool(verb).call(input, run); }), Reason::INVALID_INPUT) << verb << " " << input.dump();
  }
  EXPECT_TRUE(actions().empty());
  // (unknown key names are the provider's to find: the engine's keymap; the
  // desktop's integration tests show them refused)
}

TEST_F(DesktopToolsTest, ASandboxWhoseScreenIsNotTheOneDescribedIsRefusedBeforeAnyAction) {
  SandboxToolsOptions o;
  o.name = "screen";
  o.read = false;
  o.desktop = true;
  o.screen = {1280, 800};
  const auto from_source = sandbox_tools([this](const RunContext&) { return sandbox; }, o);
  const auto click = std::find_if(from_source.begin(), from_source.end(),
                                  [](const Tool& t) { return t.definition.id == "screen.click"; });
  ASSERT_NE(click, from_source.end());
  EXPECT_NE(click->definition.description.find("1280x800"), std::string::npos);
  EXPECT_EQ(reason_of([&] { click->call({{"x", 1}, {"y", 1}}, screen_granted(kVerbs)); }), Reason::INVALID_CONFIG);
  EXPECT_TRUE(actions().empty());

  CreateOptions c;
  c.lifetime_ms = 60000;
  Sandbox plain = sandboxes.create(c);
  EXPECT_EQ(reason_of([&] { sandbox_tools(plain, o); }), Reason::INVALID_INPUT);
  const auto for_plain = sandbox_tools([plain](const RunContext&) { return plain; }, o);
  EXPECT_EQ(reason_of([&] { for_plain.front().call(json::object(), screen_granted(kVerbs)); }), Reason::INVALID_INPUT);
  o.screen = {10, 10};
  EXPECT_EQ(reason_of([&] { sandbox_tools([this](const RunContext&) { return sandbox; }, o); }), Reason::INVALID_INPUT);
}

// A run's sandbox (with its X server) is made only for a call that can act:
// input the limits layer would refuse is refused first.
TEST_F(DesktopToolsTest, RefusedInputMakesNoPerRunSandbox) {
  auto per_run = sandbox_per_run(sandboxes, [](const RunInfo&) {
    CreateOptions c;
    c.lifetime_ms = 60000;
    c.desktop = DesktopSize{1024, 768};
    return c;
  });
  SandboxToolsOptions o;
  o.name = "screen";
  o.read = false;
  o.desktop = true;
  o.screen = {1024, 768};
  const auto run_tools = sandbox_tools(per_run->source(), o);
  const auto call = [&](const std::string& verb, const json& input) {
    for (const auto& t : run_tools) {
      if (t.definition.id == "screen." + verb) return t.call(input, screen_granted(kVerbs));
    }
    throw std::runtime_error("no tool " + verb);
  };
  const int before = provider->state->creates;
  for (const auto& entry : std::vector<std::pair<std::string, json>>{
           {"type", {{"text", ""}}},
           {"type", {{"text", std::string(kMaxDesktopTextBytes + 1, 'a')}}},
           {"key", {{"keys", ""}}},
           {"screenshot", {{"region", {{"x", 1000}, {"y", 0}, {"width", 100}, {"height", 1}}}}},
           {"drag", {{"path", {{{"x", 1}, {"y", 2}}, {{"x", 1}, {"y", 768}}}}}},
       }) {
    const std::string& verb = entry.first;
    const json& input = entry.second;
    EXPECT_EQ(reason_of([&] { call(verb, input); }), Reason::INVALID_INPUT) << verb << " " << input.dump();
  }
  EXPECT_EQ(provider->state->creates, before);
  EXPECT_EQ(per_run->size(), 0u);
  call("click", {{"x", 1}, {"y", 1}});
  EXPECT_EQ(provider->state->creates, before + 1);
  per_run->release("run-1");
}

}  // namespace
}  // namespace mayura
