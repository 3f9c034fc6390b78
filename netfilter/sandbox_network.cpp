#include "mayura/netfilter/sandbox_network.hpp"

#include "mayura/errors.hpp"
#include "mayura/netfilter/allowlist_proxy.hpp"
#include "mayura/netfilter/dns_forwarder.hpp"
#include "mayura/netfilter/dns_server.hpp"
#include "mayura/netfilter/nftables.hpp"
#include "mayura/netfilter/sandbox_services.hpp"
#include "veth.hpp"

namespace mayura::netfilter {
namespace {

// TCP to any synthetic address, on any port, goes to the proxy's
// transparent listener; the engine's own /24 is left alone. The table lives
// in the sandbox's namespace, which the sandbox cannot change.
const std::string kRedirect = std::string(
                                  "table ip mayura {\n"
                                  "  chain output {\n"
                                  "    type nat hook output priority -100; policy accept;\n"
                                  "    ip daddr 198.18.0.0/15 ip daddr != 198.18.0.0/24 meta l4proto tcp dnat to ") +
                              kServiceAddressText + ":" + std::to_string(kTransparentPort) + "\n  }\n}\n";

}  // namespace

Egress& NetworkContext::egress() {
  std::call_once(egress_started_, [this] { egress_ = std::make_unique<Egress>(egress_options_); });
  return *egress_;
}

const HostLinkOptions& NetworkContext::host_link() {
  std::call_once(host_table_checked_, [this] { remove_unused_host_table(host_link_); });
  return host_link_;
}

struct SandboxNetwork::Allowlisted {
  Allowlisted(NetworkContext& context, int netns, const Network& network)
      : policy(std::make_shared<AllowlistPolicy>(Allowlist(network.allow))), netns_fd(netns) {
    const NftResult r = run_nft(netns, "add table ip mayura\ndelete table ip mayura\n" + kRedirect);
    if (!r.ok) throw SandboxError(Reason::INTERNAL, "adding the allowlist's nftables rule: " + r.error);
    try {
      dns.emplace(context.io, netns, kServiceAddress, kDnsPort,
                  [p = policy](const std::string& name) -> std::optional<std::uint32_t> {
                    if (!p->allowlist()->allows_name(name)) return std::nullopt;
                    return p->addresses().address_of(normalize_domain(name));
                  });
      proxy = std::make_unique<AllowlistProxy>(context.io, netns, policy, context.egress());
    } catch (...) {
      remove_rule();
      throw;
    }
  }
  ~Allowlisted() {
    proxy.reset();
    dns.reset();
    remove_rule();
  }
  void remove_rule() noexcept { run_nft(netns_fd, "delete table ip mayura\n"); }

  std::shared_ptr<AllowlistPolicy> policy;
  int netns_fd;
  std::optional<DnsServer> dns;
  std::unique_ptr<AllowlistProxy> proxy;
};

struct SandboxNetwork::Open {
  Open(NetworkContext& context, int netns, std::uint32_t slot)
      : link(netns, slot, context.host_link()), dns(context.io, netns, context.egress()) {}
  HostLink link;
  DnsForwarder dns;
};

SandboxNetwork::SandboxNetwork(NetworkContext& context, int netns, std::uint32_t slot)
    : context_(context), netns_(netns), slot_(slot) {}

SandboxNetwork::~SandboxNetwork() { clear(); }

void SandboxNetwork::clear() noexcept {
  allowlisted_.reset();
  open_.reset();
  kind_ = NetworkKind::none;
}

void SandboxNetwork::set(const Network& network) {
  std::lock_guard lock(mutex_);
  if (network.kind == NetworkKind::allowlist && allowlisted_) {
    allowlisted_->policy->set(Allowlist(network.allow));
    allowlisted_->proxy->recheck();
    return;
  }
  if (network.kind == kind_ && network.kind != NetworkKind::allowlist) return;
  clear();
  if (network.kind == NetworkKind::none) return;
  if (!service_address_) {
    // On loopback the whole prefix becomes local: one address makes every
    // synthetic address answerable inside.
    RouteSocket(netns_).add_address("lo", kServiceAddress, kServicePrefix);
    service_address_ = true;
  }
  if (network.kind == NetworkKind::allowlist) {
    allowlisted_ = std::make_unique<Allowlisted>(context_, netns_, network);
  } else {
    open_ = std::make_unique<Open>(context_, netns_, slot_);
  }
  kind_ = network.kind;
}

void SandboxNetwork::take_back(const Network& network) {
  {
    std::lock_guard lock(mutex_);
    service_address_ = network.kind != NetworkKind::none;  // on its loopback since it had the network
  }
  if (network.kind == NetworkKind::all) remove_left_link(slot_);
  set(network);
}

NetworkKind SandboxNetwork::kind() const {
  std::lock_guard lock(mutex_);
  return kind_;
}

std::map<std::string, std::string> SandboxNetwork::env() const {
  std::lock_guard lock(mutex_);
  if (kind_ != NetworkKind::allowlist) return {};
  const std::string url = proxy_url();
  const std::string local = "localhost,127.0.0.1,::1";
  return {{"HTTP_PROXY", url},  {"http_proxy", url}, {"HTTPS_PROXY", url},
          {"https_proxy", url}, {"NO_PROXY", local}, {"no_proxy", local}};
}

}  // namespace mayura::netfilter
