#pragma once
// The allowlist's proxy, inside one sandbox's network namespace. Two
// listeners on the service address:
// - transparent (kTransparentPort): nftables sends every TCP connection to
//   a synthetic address here; the original destination names the domain
//   and the port;
// - HTTP (kProxyPort): CONNECT host:port, or an absolute http:// request,
//   for clients that use HTTP(S)_PROXY.
// Either way the name and port must be allowed now; then the engine
// connects on the host (Egress) and splices. A refusal is a reset or a 403
// at once, never a hang and never a connection that seems to work.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mayura/netfilter/allowlist.hpp"
#include "mayura/netfilter/egress.hpp"
#include "mayura/netfilter/synthetic_addresses.hpp"

namespace mayura::netfilter {

// What a sandbox may reach now, read by its proxy and its DNS server on the
// io thread and changed by set_network on another. Thread-safe.
class AllowlistPolicy {
 public:
  explicit AllowlistPolicy(Allowlist allowlist) : allowlist_(std::make_shared<const Allowlist>(std::move(allowlist))) {}
  std::shared_ptr<const Allowlist> allowlist() const {
    std::lock_guard lock(mutex_);
    return allowlist_;
  }
  void set(Allowlist allowlist) {
    auto next = std::make_shared<const Allowlist>(std::move(allowlist));
    std::lock_guard lock(mutex_);
    allowlist_ = std::move(next);
  }
  SyntheticAddresses& addresses() { return addresses_; }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const Allowlist> allowlist_;
  SyntheticAddresses addresses_;
};

class AllowlistProxy {
 public:
  // Listens at once inside `netns` (throws SandboxError naming the step).
  AllowlistProxy(boost::asio::io_context& io, int netns, std::shared_ptr<AllowlistPolicy> policy, Egress& egress);
  // Stops listening and cuts every connection; returns when none of its
  // handlers runs any more.
  ~AllowlistProxy();
  AllowlistProxy(const AllowlistProxy&) = delete;
  AllowlistProxy& operator=(const AllowlistProxy&) = delete;

  // Cuts the connections the policy no longer allows (after it changed).
  void recheck();

  struct Counts {
    std::uint64_t allowed = 0;
    std::uint64_t refused = 0;
  };
  Counts counts() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::netfilter
