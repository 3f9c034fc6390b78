// The MCP session's reply writer: a queue, and a thread that writes it out.

#include "mcp_replies.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string_view>

namespace mayura::tools {
namespace {

constexpr std::size_t kPage = 4096;

}  // namespace

McpReplies::McpReplies(int out, int gone)
    : out_(out),
      gone_(gone),
      stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      writer_("mayura-mcp-out", [this] { write_all(); }) {}

McpReplies::~McpReplies() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  const std::uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  writer_.join();
}

void McpReplies::push(std::string line) {
  {
    std::lock_guard lock(mutex_);
    if (gone_now_ || closing_) return;
    if (queued_bytes_ + line.size() > kMaxQueuedBytes) {
      gone_now_ = true;
    } else {
      queued_bytes_ += line.size() + 1;
      queue_.push_back(std::move(line) + "\n");
    }
  }
  changed_.notify_all();
  client_gone();
}

void McpReplies::drain(int stop) {
  std::unique_lock lock(mutex_);
  while ((!queue_.empty() || writing_) && !gone_now_) {
    lock.unlock();
    pollfd p = {stop, POLLIN, 0};
    const bool stopped = ::poll(&p, 1, 50) > 0;
    lock.lock();
    if (stopped) return;
  }
}

void McpReplies::write_all() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return closing_ || gone_now_ || !queue_.empty(); });
    if (closing_ || gone_now_) return;
    std::string line = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= line.size();
    writing_ = true;
    lock.unlock();
    const bool written = write_line(line);
    lock.lock();
    writing_ = false;
    if (!written) {
      gone_now_ = !closing_;
      lock.unlock();
      client_gone();
      lock.lock();
    }
  }
}

bool McpReplies::write_line(const std::string& line) {
  std::string_view rest(line);
  while (!rest.empty()) {
    // Waits for room, or the destructor's word: a client that stopped
    // reading cannot hold the writer past the session's end.
    pollfd fds[2] = {{out_, POLLOUT, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (fds[1].revents) return false;
    if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
    // At most a pipe's page at once: a write that poll() said has room
    // then never blocks, whatever the client does.
    const ssize_t n = ::write(out_, rest.data(), std::min<std::size_t>(rest.size(), kPage));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void McpReplies::client_gone() {
  bool gone = false;
  {
    std::lock_guard lock(mutex_);
    gone = gone_now_;
  }
  if (!gone) return;
  const std::uint64_t one = 1;
  (void)!::write(gone_, &one, sizeof one);
}

}  // namespace mayura::tools
