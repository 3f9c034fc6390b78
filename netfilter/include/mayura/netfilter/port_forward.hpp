#pragma once
// Published ports: the engine listens on 127.0.0.1 (an ephemeral port, in
// the engine's own network namespace) and forwards each connection to
// 127.0.0.1:PORT inside a sandbox's namespace, so a server bound to the
// sandbox's loopback is reachable from the host and from nowhere else, and
// there only by its owner and root (PortOwners). It works for every network
// kind, none included.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>

#include "mayura/netfilter/io_thread.hpp"
#include "mayura/netfilter/port_owners.hpp"

namespace mayura::netfilter {

class PortForwarder {
 public:
  // Listens at once, once `owners` lets only `owner` (and root) connect to
  // the listener (throws SandboxError naming the step if it cannot); serves
  // on `io`. `netns` is duplicated: the caller keeps its own. `owners`
  // outlives this. `host_port`: the one to listen on if it is free (a
  // sandbox taken back keeps its URL), else, as with 0, an ephemeral one.
  PortForwarder(boost::asio::io_context& io, int netns, std::uint16_t port, PortOwners& owners, uid_t owner,
                std::uint16_t host_port = 0);
  // Stops listening and cuts every forwarded connection; returns when no
  // handler of it runs any more. Then the port's rule goes.
  ~PortForwarder();
  PortForwarder(const PortForwarder&) = delete;
  PortForwarder& operator=(const PortForwarder&) = delete;

  std::uint16_t host_port() const { return host_port_; }

 private:
  struct State;
  std::shared_ptr<State> state_;
  PortOwners& owners_;
  std::uint16_t host_port_ = 0;
};

}  // namespace mayura::netfilter
