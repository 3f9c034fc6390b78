#pragma once
// The DNS of a sandbox with network `all`: a UDP socket on the service
// address inside its namespace that passes each query to the host's
// resolvers (or the operator's servers) and returns their answer. The host's
// resolver often listens on the host's own loopback, which the sandbox
// cannot reach; the engine can.

#include <boost/asio/io_context.hpp>
#include <memory>

#include "mayura/netfilter/egress.hpp"

namespace mayura::netfilter {

class DnsForwarder {
 public:
  // Binds the service address's DNS port inside `netns` at once (throws
  // SandboxError naming the step), and serves on `io`.
  DnsForwarder(boost::asio::io_context& io, int netns, Egress& egress);
  ~DnsForwarder();  // returns when no handler of it runs any more
  DnsForwarder(const DnsForwarder&) = delete;
  DnsForwarder& operator=(const DnsForwarder&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::netfilter
