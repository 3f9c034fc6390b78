#pragma once
// The allowlist's DNS server: a UDP socket made inside a sandbox's network
// namespace, served on the engine's io thread. Every answer comes from the
// allowlist at once: an allowed name gets its synthetic address (A) or an
// empty answer (other types, so clients fall back to A); any other name gets
// NXDOMAIN. Nothing is ever asked upstream, so a refused name leaves no trace
// outside the sandbox. (A server that leaves some names unanswered stands
// for a stalled upstream in tests.)

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mayura::netfilter {

class DnsServer {
 public:
  // The address for a name if it is allowed (the name as asked); none if not.
  using Resolve = std::function<std::optional<std::uint32_t>(const std::string& name)>;
  // Whether a query for the name is dropped, never answered.
  using Unanswered = std::function<bool(const std::string& name)>;

  // Binds address:port (host byte order) inside `netns` at once (throws
  // SandboxError naming the step), and serves on `io`.
  DnsServer(boost::asio::io_context& io, int netns, std::uint32_t address, std::uint16_t port, Resolve resolve,
            Unanswered unanswered = {});
  // Stops; returns when no handler of it runs any more.
  ~DnsServer();
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

  std::uint64_t answered() const;  // queries answered so far
  std::uint64_t dropped() const;   // queries left unanswered so far

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::netfilter
