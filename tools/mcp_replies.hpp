#pragma once
// An MCP session's replies to its client's output, written by a thread of
// their own: a call's completion (on the engine's reactor) only queues its
// reply, so a client that stops reading stalls nothing but its own replies.
// A client that closed its output, or whose unread replies pile past a
// bound, is gone: the session is told (its stop word), and what is still
// queued is dropped.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

#include "mayura/base/unique_fd.hpp"
#include "mayura/runtime.hpp"

namespace mayura::tools {

class McpReplies {
 public:
  // Unread replies the client may leave queued: a few screenshots.
  static constexpr std::size_t kMaxQueuedBytes = std::size_t{64} << 20;

  // Writes to `out`; writes 1 to the eventfd `gone` when the client is gone.
  McpReplies(int out, int gone);
  // Drops what is still queued, and stops the writer at once, even in the
  // middle of a write the client does not read.
  ~McpReplies();
  McpReplies(const McpReplies&) = delete;
  McpReplies& operator=(const McpReplies&) = delete;

  // One message (a line without its newline), from any thread.
  void push(std::string line);
  // Waits until every reply queued is written, or the client is gone, or
  // `stop` (an fd) becomes readable.
  void drain(int stop);

 private:
  void write_all();
  bool write_line(const std::string& line);  // false: the client is gone, or the writer stops
  void client_gone();

  int out_;
  int gone_;
  UniqueFd stop_;  // an eventfd: the destructor's word to the writer
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;  // a line taken off the queue and not yet written
  bool closing_ = false;
  bool gone_now_ = false;
  OwnedThread writer_;
};

}  // namespace mayura::tools
