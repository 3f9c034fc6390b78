#pragma once
// What one sandbox's network namespace has, by network kind, and changing it
// while the sandbox runs:
// - none: loopback only;
// - allowlist: the service address on loopback, an nftables rule sending TCP
//   to synthetic addresses to the proxy, the allowlist's DNS server and the
//   proxy (AllowlistProxy);
// - all: a veth to the host with NAT (HostLink) and a DNS forwarder.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "mayura/netfilter/egress.hpp"
#include "mayura/netfilter/host_link.hpp"
#include "mayura/types.hpp"

namespace mayura::netfilter {

// What every sandbox's network shares: the engine's io thread, its way out
// and where the veths of network `all` get their addresses. What only a
// network needs is done once the first network needs it, never for an
// engine whose sandboxes have none (mayura-run's usual case).
class NetworkContext {
 public:
  NetworkContext(boost::asio::io_context& context, Egress::Options egress, HostLinkOptions host_link)
      : io(context), egress_options_(std::move(egress)), host_link_(std::move(host_link)) {}
  NetworkContext(const NetworkContext&) = delete;
  NetworkContext& operator=(const NetworkContext&) = delete;

  // The engine's way out, started (its lookup threads) by the first call,
  // from the first allowlist or `all` network; safe from many threads.
  Egress& egress();
  // The options of network `all`'s host links. The first call removes the
  // host's table if a dead engine left it unused, so that the first link
  // starts from a table defined afresh; safe from many threads.
  const HostLinkOptions& host_link();

  boost::asio::io_context& io;

 private:
  const Egress::Options egress_options_;
  const HostLinkOptions host_link_;
  std::once_flag egress_started_;
  std::unique_ptr<Egress> egress_;
  std::once_flag host_table_checked_;
};

class SandboxNetwork {
 public:
  // `netns` is the sandbox's (the caller keeps it open for as long as this
  // lives); `slot` is unique among live sandboxes of the host.
  SandboxNetwork(NetworkContext& context, int netns, std::uint32_t slot);
  ~SandboxNetwork();  // removes what the current kind made; never throws
  SandboxNetwork(const SandboxNetwork&) = delete;
  SandboxNetwork& operator=(const SandboxNetwork&) = delete;

  // Makes the namespace's network `network` (already checked). Changing one
  // allowlist for another keeps the services and cuts the connections no
  // longer allowed; any other change removes the old kind first, so if the
  // new one cannot be made, the sandbox is left with none (and this throws).
  void set(const Network& network);
  // Makes `network` again in a namespace where an engine that ended had it
  // (live restore): what that engine added to the namespace is taken as
  // there, its link of network `all` replaced, and its services (the
  // allowlist's DNS server and proxy, network all's DNS forwarder), which
  // ended with it, started anew.
  void take_back(const Network& network);
  NetworkKind kind() const;
  // The variables every command gets for this network (the proxy's for an
  // allowlist, both cases, with NO_PROXY for loopback).
  std::map<std::string, std::string> env() const;

 private:
  struct Allowlisted;
  struct Open;
  void clear() noexcept;

  NetworkContext& context_;
  int netns_;
  std::uint32_t slot_;
  mutable std::mutex mutex_;
  NetworkKind kind_ = NetworkKind::none;
  std::unique_ptr<Allowlisted> allowlisted_;
  std::unique_ptr<Open> open_;
  bool service_address_ = false;  // on loopback once some kind needed it
};

}  // namespace mayura::netfilter
