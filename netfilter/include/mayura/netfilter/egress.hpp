#pragma once
// The engine's way out for sandboxes that may not go out themselves: an
// allowed name is resolved on the host, the addresses it resolves to are
// checked (no loopback, link-local, metadata or host address; private ones
// only if allowed), and the connection is made to an address that was
// checked, never to a second lookup. Shared by every sandbox of a provider.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "mayura/netfilter/address_policy.hpp"
#include "mayura/netfilter/upstream_dns.hpp"

namespace mayura::netfilter {

class Egress {
 public:
  struct Options {
    std::vector<boost::asio::ip::address_v4> dns_servers;  // empty: the host's resolver
    // How long a lookup waits for each of the servers' answers.
    std::chrono::seconds dns_wait{UpstreamDns::kWaitForAnswer};
    EgressRules rules;
  };
  // A connection made, or why not (for the client: a status text).
  using Connected = std::function<void(std::optional<boost::asio::ip::tcp::socket>, const std::string& why)>;

  explicit Egress(Options options);
  ~Egress();  // waits for lookups under way
  Egress(const Egress&) = delete;
  Egress& operator=(const Egress&) = delete;

  // Who asks (a sandbox's proxy or DNS forwarder): the lookup threads are
  // shared by every sandbox, and each caller has at most kLookupsPerCaller
  // of them at once, its further lookups waiting their turn in its own
  // queue. A sandbox whose names never resolve holds its share, never the
  // threads every other sandbox's lookups need.
  using Caller = const void*;
  static constexpr std::size_t kLookupThreads = 8;
  static constexpr std::size_t kLookupsPerCaller = 2;

  // Resolves `name` off the io thread, then connects to its permitted
  // addresses in turn from `io` (the engine's own network namespace).
  // `done` runs on `io`'s thread.
  void connect(boost::asio::io_context& io, Caller caller, const std::string& name, std::uint16_t port, Connected done);
  // A place for one more proxied connection in the engine's budget (each
  // takes up to six descriptors: two sockets, two pipes); false when the
  // budget, drawn from the open-file limit, is spent.
  bool take_connection();
  void give_back_connection();

  // Drops `caller`'s lookups that wait their turn (a sandbox's network that
  // ended); those running end as they would, their `done` still called.
  void forget(Caller caller);

  // Passes a DNS query to the upstream servers off the io thread; `done`
  // gets the answer (none on failure) on `io`'s thread.
  void forward_dns(boost::asio::io_context& io, Caller caller, std::string query,
                   std::function<void(std::optional<std::string>)> done);

 private:
  // The addresses `resolved` may be connected to, and why not if none.
  std::vector<boost::asio::ip::address> permitted(const std::vector<boost::asio::ip::address>& resolved,
                                                  std::string& why);
  std::vector<boost::asio::ip::address> own_addresses();
  // Runs `work` on a lookup thread within `caller`'s share, or queues it.
  void look_up(Caller caller, std::function<void()> work);
  void start_locked(Caller caller, std::function<void()> work);
  void finished(Caller caller);

  Options options_;
  std::mutex own_mutex_;
  std::vector<boost::asio::ip::address> own_;
  std::chrono::steady_clock::time_point own_until_{};
  UpstreamDns upstream_;
  std::atomic<long> connections_{0};
  struct Share {
    std::size_t running = 0;
    std::deque<std::function<void()>> waiting;
  };
  std::mutex shares_mutex_;
  std::map<Caller, Share> shares_;
  bool stopping_ = false;  // (the destructor's) no waiting lookup starts
  boost::asio::thread_pool lookups_{kLookupThreads};
};

}  // namespace mayura::netfilter
