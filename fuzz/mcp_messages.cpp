// mayura-run mcp's session (tools/mcp_server.cpp): raw bytes read as its
// lines, each handled as a client's message, the tools acting on a sandbox
// that lives in memory. Properties: every reply is one JSON-RPC 2.0 object
// with a result or an error, never both; each request with a valid id is
// answered exactly once (unless the input cancels one); nothing throws out
// of the session.

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz.hpp"
#include "mcp_server.hpp"
#include "memory_provider.hpp"

using nlohmann::json;
using namespace mayura;

namespace {

struct Session {
  Sandboxes sandboxes = create_sandboxes(std::make_shared<fuzz::MemoryProvider>(), {});
  Sandbox sandbox = sandboxes.create([] {
    CreateOptions c;
    c.lifetime_ms = 60'000;
    return c;
  }());
  std::vector<Tool> tools = sandbox_tools(sandbox, [] {
    SandboxToolsOptions o;
    o.exec = o.write = o.remove = o.background = true;
    return o;
  }());
};

// The id a line's request is answered under, if it is a request: one with
// a method (a method that is no string is answered too, refused under the
// request's id) and an id that can be answered.
std::optional<std::string> request_id(std::string_view line) {
  const json m = json::parse(line, nullptr, false);
  if (!m.is_object() || m.value("jsonrpc", json()) != "2.0") return std::nullopt;
  const auto method = m.find("method");
  const auto id = m.find("id");
  if (method == m.end() || id == m.end()) return std::nullopt;
  if (!id->is_string() && !id->is_number_integer()) return std::nullopt;
  return id->dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Session session;
  const std::string_view bytes = fuzz::bytes(data, size);
  std::mutex mutex;
  std::vector<std::string> replies;
  std::map<std::string, int> asked;
  {
    tools::McpServer server(session.tools, session.sandboxes, "fuzz", false, [&](const std::string& line) {
      std::lock_guard lock(mutex);
      replies.push_back(line);
    });
    std::size_t start = 0;
    while (start <= bytes.size()) {
      std::size_t end = bytes.find('\n', start);
      if (end == std::string_view::npos) end = bytes.size();
      const std::string_view line = bytes.substr(start, end - start);
      if (const auto id = request_id(line)) ++asked[*id];
      server.receive(line);
      start = end + 1;
    }
    server.finish();
  }
  std::map<std::string, int> answered;
  for (const std::string& line : replies) {
    FUZZ_CHECK(line.find('\n') == std::string::npos);
    const json reply = json::parse(line);
    FUZZ_CHECK(reply.is_object() && reply["jsonrpc"] == "2.0");
    FUZZ_CHECK(reply.contains("result") != reply.contains("error"));
    if (reply.contains("error")) FUZZ_CHECK(reply["error"]["code"].is_number_integer());
    if (!reply["id"].is_null()) ++answered[reply["id"].dump()];
  }
  if (bytes.find("notifications/cancelled") == std::string_view::npos) {
    if (answered != asked) {
      for (const std::string& line : replies) std::fprintf(stderr, "reply: %s\n", line.c_str());
    }
    FUZZ_CHECK(answered == asked);
    if (!asked.empty()) fuzz::accept();
  }
  return 0;
}
