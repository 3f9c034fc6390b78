// The MCP session of mayura-run mcp over a provider that makes no sandbox:
// the handshake, the tool list, calls and their results, JSON-RPC's errors,
// and cancellation.

#include "tools/mcp_server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "fake_provider.hpp"

namespace mayura::tools {
namespace {

using nlohmann::json;
using testing::FakeProvider;

class McpServerTest : public ::testing::Test {
 protected:
  McpServerTest() {
    CreateOptions c;
    c.lifetime_ms = 60000;
    sandbox = sandboxes.create(c);
  }
  std::unique_ptr<McpServer> serve(const SandboxToolsOptions& o = exec_options()) {
    return std::make_unique<McpServer>(sandbox_tools(sandbox, o), sandboxes, "a test sandbox", false,
                                       [this](const std::string& line) {
                                         EXPECT_EQ(line.find('\n'), std::string::npos);
                                         std::lock_guard lock(mutex);
                                         replies.push_back(json::parse(line));
                                       });
  }
  static SandboxToolsOptions exec_options() {
    SandboxToolsOptions o;
    o.exec = true;
    return o;
  }
  // The reply to request `id`, waited for (a call's comes from the runtime).
  json reply_to(const json& id) {
    for (int i = 0; i < 1000; ++i) {
      {
        std::lock_guard lock(mutex);
        for (const json& r : replies) {
          if (r.contains("id") && r["id"] == id) return r;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no reply to " << id.dump();
    return json();
  }
  std::size_t reply_count() {
    std::lock_guard lock(mutex);
    return replies.size();
  }
  static std::string request(const json& id, const std::string& method, const json& params = json::object()) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
  }

  std::shared_ptr<FakeProvider> provider = std::make_shared<FakeProvider>();
  Sandboxes sandboxes = create_sandboxes(provider, {});
  Sandbox sandbox;
  std::mutex mutex;
  std::vector<json> replies;
};

TEST_F(McpServerTest, TheHandshakeSettlesAVersionAndListsTheTools) {
  auto server = serve();
  server->receive(request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()}}));
  const json init = reply_to(1)["result"];
  EXPECT_EQ(init["protocolVersion"], "2025-06-18");
  EXPECT_EQ(init["serverInfo"]["name"], "mayura");
  EXPECT_EQ(init["capabilities"]["tools"]["listChanged"], false);
  EXPECT_EQ(init["instructions"], "a test sandbox");
  // A version this server does not speak: its newest, for the client to judge.
  server->receive(request("two", "initialize", {{"protocolVersion", "1999-01-01"}}));
  EXPECT_EQ(reply_to("two")["result"]["protocolVersion"], kMcpVersions[0]);
  server->receive(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump());
  server->receive(request(3, "ping"));
  EXPECT_EQ(reply_to(3)["result"], json::object());

  server->receive(request(4, "tools/list"));
  const json tools = reply_to(4)["result"]["tools"];
  const auto definitions = sandbox_tools(sandbox, exec_options());
  ASSERT_EQ(tools.size(), definitions.size());
  for (std::size_t i = 0; i < tools.size(); ++i) {
    EXPECT_EQ(tools[i]["name"], definitions[i].definition.name);
    EXPECT_EQ(tools[i]["description"], definitions[i].definition.description);
    EXPECT_EQ(tools[i]["inputSchema"], definitions[i].definition.input_schema);
    EXPECT_EQ(tools[i]["annotations"]["readOnlyHint"], definitions[i].definition.effect == ToolEffect::read);
  }
  EXPECT_EQ(tools[0]["name"], "sandbox_read");
  EXPECT_EQ(tools.back()["name"], "sandbox_exec");
  EXPECT_EQ(reply_count(), 4u);  // the notification had no answer
}

TEST_F(McpServerTest, ACallAnswersWithContentAndAToolsFailureIsAnErrorResult) {
  auto server = serve();
  provider->state->next_result = ExecResult{3, "hi\n", "", false, 5, false};
  server->receive(request(1, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "echo hi"}}}}));
  const json done = reply_to(1)["result"];
  EXPECT_EQ(done["isError"], false);
  ASSERT_EQ(done["content"].size(), 1u);
  EXPECT_EQ(done["content"][0]["type"], "text");
  const json result = json::parse(done["content"][0]["text"].get<std::string>());
  EXPECT_EQ(result["exitCode"], 3);
  EXPECT_EQ(result["stdout"], "hi\n");

  // The model's bad input, told to the model.
  server->receive(request(2, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", 1}}}}));
  const json refused = reply_to(2)["result"];
  EXPECT_EQ(refused["isError"], true);
  EXPECT_EQ(refused["content"][0]["text"].get<std::string>().rfind("INVALID_INPUT: ", 0), 0u) << refused.dump();
  // No arguments: an empty object, which the tool then refuses.
  server->receive(request(3, "tools/call", {{"name", "sandbox_exec"}}));
  EXPECT_EQ(reply_to(3)["result"]["isError"], true);

  // A tool this session does not serve is the client's error.
  server->receive(request(4, "tools/call", {{"name", "sandbox_remove"}, {"arguments", {{"path", "/"}}}}));
  EXPECT_EQ(reply_to(4)["error"]["code"], -32602);
  server->receive(request(5, "tools/call", {{"arguments", json::object()}}));
  EXPECT_EQ(reply_to(5)["error"]["code"], -32602);
  server->receive(request(6, "tools/call", {{"name", "sandbox_exec"}, {"arguments", json::array()}}));
  EXPECT_EQ(reply_to(6)["error"]["code"], -32602);
}

TEST_F(McpServerTest, WhatIsNoRequestIsAJsonRpcErrorOrNothing) {
  auto server = serve();
  server->receive("{not json");
  const json parse = reply_to(nullptr);
  EXPECT_EQ(parse["error"]["code"], -32700);
  const auto code_of = [&](const std::string& line) {
    const json answer = server->answer(json::parse(line));
    return answer.is_null() ? 0 : answer["error"]["code"].get<int>();
  };
  EXPECT_EQ(code_of("[]"), -32600);  // batches are gone from the protocol
  EXPECT_EQ(code_of("42"), -32600);
  EXPECT_EQ(code_of(R"({"jsonrpc":"1.0","id":1,"method":"ping"})"), -32600);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"), -32600);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})"), -32600);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":{},"method":"ping"})"), -32600);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":1,"method":7})"), -32600);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[]})"), -32602);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})"), -32601);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","method":"notifications/whatever"})"), 0);
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","id":9,"result":{}})"), 0);  // a reply to nothing of ours
  EXPECT_EQ(code_of(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[]}})"), 0);
  const std::size_t before = reply_count();
  server->receive("");
  server->receive(" \r");
  EXPECT_EQ(reply_count(), before);
  server->refuse_oversized();
  EXPECT_EQ(reply_count(), before + 1);
}

TEST_F(McpServerTest, ACancelledCallStopsAndIsNotAnswered) {
  auto server = serve();
  provider->state->block_until_cancelled = true;
  server->receive(request(7, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "sleep 1000"}}}}));
  // Its id cannot be taken again while it runs.
  server->receive(request(7, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "true"}}}}));
  EXPECT_EQ(reply_to(7)["error"]["code"], -32600);
  server->receive(
      json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 7}}}}.dump());
  server->finish();  // returns once the call has ended
  EXPECT_EQ(reply_count(), 1u);
  EXPECT_EQ(server->answer(json::parse(R"({"jsonrpc":"2.0","id":5,"method":7})"))["id"], 5);

  // A client that never waits for its answers is told to, past the bound.
  for (int i = 100; i < 100 + static_cast<int>(kMcpMaxCallsUnderWay); ++i) {
    server->receive(request(i, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "sleep 1"}}}}));
  }
  server->receive(request(99, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "true"}}}}));
  EXPECT_EQ(reply_to(99)["error"]["code"], -32600);
  server->finish();
  for (int i = 100; i < 100 + static_cast<int>(kMcpMaxCallsUnderWay); ++i)
    EXPECT_EQ(reply_to(i)["result"]["isError"], true);

  // A session that ends (finish) stops what runs, and says so.
  server->receive(request(8, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "sleep 1000"}}}}));
  EXPECT_FALSE(server->wait_idle(std::chrono::milliseconds(50)));
  server->finish();
  EXPECT_TRUE(server->wait_idle(std::chrono::milliseconds(0)));
  const json stopped = reply_to(8)["result"];
  EXPECT_EQ(stopped["isError"], true);
  EXPECT_EQ(stopped["content"][0]["text"].get<std::string>().rfind("CANCELLED: ", 0), 0u) << stopped.dump();
  provider->state->block_until_cancelled = false;
  server->receive(request(9, "tools/call", {{"name", "sandbox_exec"}, {"arguments", {{"command", "true"}}}}));
  EXPECT_EQ(reply_to(9)["result"]["isError"], false);
}

TEST(McpContentTest, AScreenshotIsAnImageBlockAndTheRestIsText) {
  const json shot = {{"type", "image"},
                     {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "iVBO"}}}};
  EXPECT_EQ(mcp_content(shot), json::parse(R"([{"type":"image","data":"iVBO","mimeType":"image/png"}])"));
  const json text = mcp_content({{"x", 1}, {"bad", "\xff"}});
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0]["type"], "text");
  EXPECT_EQ(json::parse(text[0]["text"].get<std::string>())["x"], 1);
}

}  // namespace
}  // namespace mayura::tools
