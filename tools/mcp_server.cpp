// An MCP session over the agent tools: JSON-RPC requests in, replies out,
// each tool call on the sandboxes' runtime (no thread of its own).

#include "mcp_server.hpp"

#include <algorithm>
#include <exception>

namespace mayura::tools {
namespace {

using nlohmann::json;

// JSON-RPC 2.0's own error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

json error_reply(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json result_reply(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

// MCP's ids are strings or integers, never null.
bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

json error_result(const std::string& text) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

// A call's failure as the model reads it: a result marked isError, its
// reason first.
json error_reply_of(const json& id, const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const SandboxError& e) {
    return result_reply(id, error_result(std::string(reason_name(e.reason())) + ": " + e.what()));
  } catch (const std::exception& e) {
    return result_reply(id, error_result(std::string("INTERNAL: ") + e.what()));
  } catch (...) {
    return result_reply(id, error_result("INTERNAL: the call failed"));
  }
}

}  // namespace

json mcp_content(const json& result) {
  // The desktop's screenshot is a model API's image block: MCP's has the
  // same bytes under other names.
  if (result.is_object() && result.value("type", "") == "image" && result.contains("source") &&
      result["source"].is_object() && result["source"].value("type", "") == "base64") {
    const json& source = result["source"];
    return json::array({{{"type", "image"},
                         {"data", source.value("data", "")},
                         {"mimeType", source.value("media_type", "image/png")}}});
  }
  return json::array({{{"type", "text"}, {"text", result.dump(-1, ' ', false, json::error_handler_t::replace)}}});
}

McpServer::McpServer(std::vector<Tool> tools, Sandboxes sandboxes, std::string instructions, bool open_world, Send send)
    : tools_(std::move(tools)),
      sandboxes_(std::move(sandboxes)),
      instructions_(std::move(instructions)),
      open_world_(open_world),
      send_(std::move(send)) {
  run_.run_id = "mcp";
  for (const Tool& t : tools_)
    run_.permissions.insert(t.definition.permissions.begin(), t.definition.permissions.end());
}

McpServer::~McpServer() { finish(); }

void McpServer::receive(std::string_view line) {
  // Blank lines between messages are no messages.
  if (std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; })) return;
  json message = json::parse(line, nullptr, false);
  if (message.is_discarded()) {
    send(error_reply(nullptr, kParseError, "not JSON"));
    return;
  }
  json reply = answer(message);
  if (!reply.is_null()) send(reply);
}

void McpServer::refuse_oversized() {
  send(error_reply(nullptr, kInvalidRequest, "a message over " + std::to_string(kMcpMaxMessageBytes) + " bytes"));
}

json McpServer::answer(const json& message) {
  if (!message.is_object() || message.value("jsonrpc", json()) != "2.0") {
    return error_reply(nullptr, kInvalidRequest, "not a JSON-RPC 2.0 message (one object per line)");
  }
  const auto method = message.find("method");
  // A client's reply to a request of ours: this server sends none.
  if (method == message.end()) return nullptr;
  if (!method->is_string()) {
    const auto id = message.find("id");
    return error_reply(id != message.end() && valid_id(*id) ? *id : json(nullptr), kInvalidRequest,
                       "'method' must be a string");
  }
  const json params = message.value("params", json::object());
  const auto id = message.find("id");
  if (id == message.end()) {
    // A notification: answered by nobody, acted on only when it cancels.
    if (*method == "notifications/cancelled" && params.is_object()) cancel(params);
    return nullptr;
  }
  if (!valid_id(*id)) return error_reply(nullptr, kInvalidRequest, "'id' must be a string or an integer");
  if (!params.is_object()) return error_reply(*id, kInvalidParams, "'params' must be an object");
  if (*method == "initialize") return result_reply(*id, initialize(params));
  if (*method == "ping") return result_reply(*id, json::object());
  if (*method == "tools/list") return result_reply(*id, tool_list());
  if (*method == "tools/call") {
    call_tool(*id, params);
    return nullptr;
  }
  return error_reply(*id, kMethodNotFound, "no method " + method->get<std::string>());
}

json McpServer::initialize(const json& params) const {
  // The client's version when this server speaks it, else the newest this
  // one does (the client then decides whether to go on).
  std::string version(kMcpVersions[0]);
  if (const auto asked = params.find("protocolVersion"); asked != params.end() && asked->is_string()) {
    for (const std::string_view v : kMcpVersions) {
      if (*asked == v) version = v;
    }
  }
  return {{"protocolVersion", version},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", "mayura"}, {"version", MAYURA_VERSION}}},
          {"instructions", instructions_}};
}

json McpServer::tool_list() const {
  json list = json::array();
  for (const Tool& t : tools_) {
    const bool reads = t.definition.effect == ToolEffect::read;
    list.push_back(
        {{"name", t.definition.name},
         {"description", t.definition.description},
         {"inputSchema", t.definition.input_schema},
         // Inside the sandbox: nothing of the client's machine
         // is changed, whatever the tool; the world is reached
         // only where the sandbox's network reaches it.
         {"annotations", {{"readOnlyHint", reads}, {"destructiveHint", !reads}, {"openWorldHint", open_world_}}}});
  }
  return {{"tools", std::move(list)}};
}

void McpServer::call_tool(const json& id, const json& params) {
  const auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    send(error_reply(id, kInvalidParams, "tools/call needs the tool's name"));
    return;
  }
  const auto tool =
      std::find_if(tools_.begin(), tools_.end(), [&](const Tool& t) { return *name == t.definition.name; });
  if (tool == tools_.end()) {
    send(error_reply(id, kInvalidParams, "no tool " + name->get<std::string>()));
    return;
  }
  json arguments = params.value("arguments", json::object());
  if (!arguments.is_object()) {
    send(error_reply(id, kInvalidParams, "'arguments' must be an object"));
    return;
  }
  const std::string key = id.dump();
  auto call = std::make_shared<Call>();
  {
    std::lock_guard lock(mutex_);
    if (calls_.count(key)) {
      send(error_reply(id, kInvalidRequest, "a request with this id is under way"));
      return;
    }
    // Each call holds its arguments and a turn of the engine's: a client
    // that never waits for its answers is told to, not queued without end.
    if (calls_.size() >= kMcpMaxCallsUnderWay) {
      send(error_reply(id, kInvalidRequest,
                       std::to_string(kMcpMaxCallsUnderWay) + " calls are under way: wait for an answer first"));
      return;
    }
    calls_.emplace(key, call);
  }
  RunContext run = run_;
  run.cancellation = call->stop.get_token();
  try {
    async_call(*tool, std::move(arguments), std::move(run), sandboxes_,
               [this, id, key, call](const std::exception_ptr& error, const json& result) {
                 // However this ends, the call is no longer under way (a
                 // finish() waits for that).
                 const CallEnded ended{*this, key};
                 if (!answered(*call)) return;
                 try {
                   send(error ? error_reply_of(id, error)
                              : result_reply(id, {{"content", mcp_content(result)}, {"isError", false}}));
                 } catch (...) {
                   // (out of memory for the reply: the client hears nothing of this call)
                 }
               });
  } catch (...) {
    // Refused before it started (the engine had no turn to give).
    const CallEnded ended{*this, key};
    send(error_reply_of(id, std::current_exception()));
  }
}

bool McpServer::answered(const Call& call) {
  std::lock_guard lock(mutex_);
  return !call.cancelled_by_client;
}

McpServer::CallEnded::~CallEnded() {
  std::lock_guard lock(server.mutex_);
  server.calls_.erase(key);
  server.ended_.notify_all();
}

void McpServer::cancel(const json& params) {
  const auto id = params.find("requestId");
  if (id == params.end() || !valid_id(*id)) return;
  std::lock_guard lock(mutex_);
  if (const auto call = calls_.find(id->dump()); call != calls_.end()) {
    call->second->cancelled_by_client = true;
    call->second->stop.request_stop();
  }
}

bool McpServer::wait_idle(std::chrono::milliseconds bound) {
  std::unique_lock lock(mutex_);
  return ended_.wait_for(lock, bound, [&] { return calls_.empty(); });
}

void McpServer::finish() {
  std::unique_lock lock(mutex_);
  for (auto& [key, call] : calls_) call->stop.request_stop();
  ended_.wait(lock, [&] { return calls_.empty(); });
}

void McpServer::send(const json& message) {
  const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard lock(send_mutex_);
  send_(line);
}

}  // namespace mayura::tools
