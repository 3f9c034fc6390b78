#pragma once
// The Model Context Protocol's server side, over the agent tools
// (mayura/tools.hpp): what `mayura-run mcp` speaks on its standard input and
// output. Each message is one line of JSON-RPC 2.0 (MCP's stdio transport).
// The session answers initialize, ping, tools/list and tools/call; a call
// runs on the sandboxes' runtime, so several run at once, and
// notifications/cancelled stops the one it names. A tool's failure is a
// result marked isError (the model reads it); a message that is no
// JSON-RPC, or names no known method or tool, is a JSON-RPC error.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/tools.hpp"

namespace mayura::tools {

// The longest message taken: a file the tools write (1 MiB, in base64) and
// more fit.
inline constexpr std::size_t kMcpMaxMessageBytes = std::size_t{16} << 20;

// The protocol versions this server speaks, newest first.
// (Not 2025-03-26, the one version whose clients may send JSON-RPC batches,
// which this server does not take.)
inline constexpr std::string_view kMcpVersions[] = {"2025-11-25", "2025-06-18", "2024-11-05"};
// The most calls under way at once; a call past it is refused.
inline constexpr std::size_t kMcpMaxCallsUnderWay = 64;

class McpServer {
 public:
  // Writes one message (a line without its newline), from any thread; the
  // server never calls it twice at once.
  using Send = std::function<void(const std::string& line)>;

  // `open_world`: whether the sandbox's network reaches the world (the
  // tools' openWorldHint).
  McpServer(std::vector<Tool> tools, Sandboxes sandboxes, std::string instructions, bool open_world, Send send);
  // finish()es.
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // One line read from the client.
  void receive(std::string_view line);
  // A line over kMcpMaxMessageBytes, dropped by the reader: answered as a
  // message that is none.
  void refuse_oversized();
  // Waits up to `bound` for the calls under way to end; true once none is
  // left. A client that closed its input may still read their replies.
  bool wait_idle(std::chrono::milliseconds bound);
  // Stops every call under way (each is answered, CANCELLED) and returns
  // when none is left: the session is ending. Later lines are answered as
  // before.
  void finish();

  // A message's reply by itself (a tools/call's comes later, through Send):
  // exposed for the fuzzer and the unit tests. Null: nothing to answer now.
  nlohmann::json answer(const nlohmann::json& message);

 private:
  nlohmann::json initialize(const nlohmann::json& params) const;
  nlohmann::json tool_list() const;
  // Starts the call; its reply is sent when it ends.
  void call_tool(const nlohmann::json& id, const nlohmann::json& params);
  void cancel(const nlohmann::json& params);
  void send(const nlohmann::json& message);

  std::vector<Tool> tools_;
  Sandboxes sandboxes_;
  std::string instructions_;
  bool open_world_ = false;
  Send send_;
  RunContext run_;  // every tool's permissions: the command line chose the tools

  std::mutex mutex_;
  std::condition_variable ended_;
  struct Call {
    std::stop_source stop;
    // By notifications/cancelled: the client has forgotten the id, and the
    // call is answered by nobody (the protocol's rule).
    bool cancelled_by_client = false;
  };
  // The calls under way, by their request's id (its JSON text).
  std::map<std::string, std::shared_ptr<Call>> calls_;
  // Whether a call's reply is to be sent (not cancelled by the client).
  bool answered(const Call& call);
  // Takes a call off calls_ when it goes, on every way a call ends.
  struct CallEnded {
    McpServer& server;
    std::string key;
    ~CallEnded();
  };
  std::mutex send_mutex_;
};

// A tool's JSON result as MCP content: an image (the desktop's screenshot)
// as an image block, anything else as one text block of its JSON.
nlohmann::json mcp_content(const nlohmann::json& result);

}  // namespace mayura::tools
