#include "mayura/netfilter/port_owners.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "mayura/errors.hpp"
#include "mayura/netfilter/nftables.hpp"

namespace mayura::netfilter {

namespace {

// The table afresh (a dead engine of the same range may have left one): a
// connection to 127.0.0.1 on a port of `ports`, from a socket whose owner
// is neither root nor the port's owner, is reset before it leaves.
std::string table_rules(const std::string& table) {
  return "add table ip " + table + "\ndelete table ip " + table + "\ntable ip " + table +
         " {\n"
         "  set ports { type inet_service; }\n"
         "  set owners { type inet_service . uid; }\n"
         "  chain output {\n"
         "    type filter hook output priority filter; policy accept;\n"
         "    ip daddr 127.0.0.0/8 tcp dport @ports meta skuid != 0 tcp dport . meta skuid != @owners"
         " reject with tcp reset\n"
         "  }\n"
         "}\n";
}

}  // namespace

PortOwners::PortOwners(std::uint32_t id_base) : netns_(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) {
  char name[32];
  std::snprintf(name, sizeof name, "mayura_ports_%08x", id_base);
  table_ = name;
}

PortOwners::~PortOwners() {
  if (!ports_.empty()) run_nft(netns_.get(), "delete table ip " + table_ + "\n");
}

std::string PortOwners::elements(std::uint16_t host_port, uid_t owner) const {
  const std::string port = std::to_string(host_port);
  return " element ip " + table_ + " ports { " + port + " }\n" + " element ip " + table_ + " owners { " + port + " . " +
         std::to_string(owner) + " }\n";
}

void PortOwners::restrict(std::uint16_t host_port, uid_t owner) {
  if (!netns_) throw SandboxError(Reason::INTERNAL, "publishing a port: the engine's network namespace is not open");
  std::lock_guard lock(mutex_);
  // A host port is one listener's: a second rule for it would be a stale one.
  if (ports_.contains(host_port)) lift_locked(host_port);
  const std::string commands =
      (ports_.empty() ? table_rules(table_) : std::string()) + "add" + elements(host_port, owner);
  const NftResult r = run_nft(netns_.get(), commands);
  if (!r.ok)
    throw SandboxError(
        Reason::INTERNAL,
        "publishing a port: the rule that lets only its owner connect (nftables table " + table_ + "): " + r.error);
  ports_[host_port] = owner;
}

void PortOwners::lift(std::uint16_t host_port) noexcept {
  std::lock_guard lock(mutex_);
  lift_locked(host_port);
}

void PortOwners::lift_locked(std::uint16_t host_port) noexcept {
  const auto it = ports_.find(host_port);
  if (it == ports_.end()) return;
  const std::string elements_of_port = elements(host_port, it->second);
  ports_.erase(it);
  // The last port takes the table with it: an engine without ports leaves
  // nothing in the host's rules. (A failure leaves a rule that only refuses.)
  run_nft(netns_.get(), ports_.empty() ? "delete table ip " + table_ + "\n" : "delete" + elements_of_port);
}

}  // namespace mayura::netfilter
