#pragma once
// Two connected TCP sockets spliced both ways: what the published ports and
// the allowlist's proxy do once both ends are open. Half-closes are passed
// on; an error on either side ends both.

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <functional>
#include <string>

#include "mayura/base/unique_fd.hpp"

namespace mayura::netfilter {

class Splice : public std::enable_shared_from_this<Splice> {
 public:
  // Both sockets must belong to the same io_context, whose thread runs every
  // handler of the splice.
  Splice(boost::asio::ip::tcp::socket a, boost::asio::ip::tcp::socket b);
  // Starts copying, with `head` (bytes already read from `a`) sent to `b` first.
  void start(std::string head = {});
  // Resets both sockets (what they still hold is dropped); the handlers
  // under way end. Call on the io thread.
  void cut();
  // Keeps `something` alive as long as the splice (a budget's ticket).
  void hold(std::shared_ptr<void> something) { held_ = std::move(something); }

 private:
  // One way: a pipe the kernel moves bytes through (splice(2), no copy to
  // the engine), or a buffer when no pipe could be had.
  struct Direction {
    UniqueFd pipe_out, pipe_in;  // the pipe's read end, and its write end
    std::size_t in_pipe = 0;     // bytes read into the pipe, not yet written out
    std::array<char, 16 * 1024> buffer{};
  };
  void pump(boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to, Direction& d);
  void copy(boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to, Direction& d);
  static void end_of(boost::asio::ip::tcp::socket& to);

  boost::asio::ip::tcp::socket a_, b_;
  std::string head_;
  Direction ab_, ba_;
  std::shared_ptr<void> held_;
};

// The splices of one service, so that stopping it (or a policy change) can
// cut them. Thread-safe.
template <class Key>
class SpliceSet {
 public:
  // Adds `splice` under `key`; false (and the splice is cut) once stopped.
  bool add(const std::shared_ptr<Splice>& splice, Key key) {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      splice->cut();
      return false;
    }
    std::erase_if(entries_, [](const Entry& e) { return e.splice.expired(); });
    entries_.push_back({splice, std::move(key)});
    return true;
  }
  // Cuts the splices whose key `cut_if` says; all of them and for good with stop().
  void cut_if(const std::function<bool(const Key&)>& which) {
    std::lock_guard lock(mutex_);
    for (auto& e : entries_) {
      if (!which(e.key)) continue;
      if (auto s = e.splice.lock()) s->cut();
    }
  }
  // Splices still open.
  std::size_t size() {
    std::lock_guard lock(mutex_);
    std::erase_if(entries_, [](const Entry& e) { return e.splice.expired(); });
    return entries_.size();
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    for (auto& e : entries_) {
      if (auto s = e.splice.lock()) s->cut();
    }
    entries_.clear();
  }

 private:
  struct Entry {
    std::weak_ptr<Splice> splice;
    Key key;
  };
  std::mutex mutex_;
  bool stopped_ = false;
  std::list<Entry> entries_;
};

// Closes `socket` with a reset, so its peer fails at once instead of seeing
// a connection that goes nowhere (or seems to succeed).
void reset(boost::asio::ip::tcp::socket& socket);

}  // namespace mayura::netfilter
