#include "mayura/netfilter/host_link.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "address_pool.hpp"
#include "host_nat.hpp"
#include "mayura/errors.hpp"
#include "netns_thread.hpp"
#include "proc_sys.hpp"
#include "veth.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::netfilter {
namespace {

constexpr const char* kSandboxLink = "eth0";
constexpr int kPairPrefix = 31;

// The calling thread's network namespace (the engine's), open.
UniqueFd own_netns() {
  UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!fd) {
    throw SandboxError(Reason::INTERNAL,
                       std::string("opening the engine's network namespace: ") + std::strerror(errno));
  }
  return fd;
}

// The link is IPv4 only. The table is IPv4's, so an IPv6 address on the host
// end (even link-local) would be a way to the host's services around it.
void turn_off_ipv6(const std::string& link) { set_proc_sys("/proc/sys/net/ipv6/conf/" + link + "/disable_ipv6", "1"); }

}  // namespace

void check_pool(const std::string& pool) { AddressPool{pool}; }

void remove_unused_host_table(const HostLinkOptions& options) noexcept {
  try {
    const UniqueFd host_netns = own_netns();
    RouteSocket host(host_netns.get());
    TableLock lock(options.lock_file);
    remove_nat_table_if_unused(host_netns.get(), host);
  } catch (...) {
    // Nothing was left, or the next link's end removes it.
  }
}

void remove_left_link(std::uint32_t slot) noexcept {
  try {
    const UniqueFd host_netns = own_netns();
    RouteSocket host(host_netns.get());
    host.delete_link(kHostLinkPrefix + std::to_string(slot));
  } catch (...) {
    // None was left: the new link is made all the same.
  }
}

struct HostLink::State {
  explicit State(const HostLinkOptions& options) : lock_file(options.lock_file) {}
  // Runs when the HostLink goes, or when its constructor throws after the
  // veth pair was made.
  ~State() {
    if (!linked) return;
    try {
      // Deleted outside the lock: a link going away never needs the table.
      host.delete_link(interface);
      TableLock lock(lock_file);
      remove_nat_table_if_unused(host_netns.get(), host);
    } catch (...) {
      // Nothing to tell a destructor's caller; the next HostLink's end
      // removes a table left behind, and a left link dies with the sandbox's
      // namespace.
    }
  }

  std::string lock_file;
  UniqueFd host_netns = own_netns();  // the engine's, where it was made
  RouteSocket host{host_netns.get()};
  std::string interface;
  SlotAddresses addresses;
  bool linked = false;
};

HostLink::HostLink(int sandbox_netns, std::uint32_t slot, const HostLinkOptions& options) {
  const AddressPool pool(options.pool);
  const SlotAddresses addresses = pool.slot(slot);
  if (options.lock_file.empty()) throw SandboxError(Reason::INVALID_CONFIG, "network `all` needs a lock file");
  // Held only while it is set up: a socket keeps its namespace alive.
  RouteSocket sandbox(sandbox_netns);
  state_ = std::make_unique<State>(options);
  State& s = *state_;
  s.interface = kHostLinkPrefix + std::to_string(slot);
  // The widest pool (/8) keeps slots to 7 digits, inside the kernel's limit.
  if (s.interface.size() >= IFNAMSIZ) {
    throw SandboxError(Reason::LIMIT_REACHED, "no link name for network slot " + std::to_string(slot));
  }
  s.addresses = addresses;
  {
    // The table is there before any packet can cross the link, and the link
    // is there before the lock goes, so no other engine removes the table
    // as unused in between.
    TableLock lock(s.lock_file);
    define_nat_table(s.host_netns.get(), pool);
    try {
      s.host.add_veth(s.interface, sandbox_netns, kSandboxLink);
    } catch (...) {
      try {
        remove_nat_table_if_unused(s.host_netns.get(), s.host);
      } catch (...) {
        // The veth's failure is what the caller needs to hear.
      }
      throw;
    }
    s.linked = true;
  }
  // From here a throw destroys state_, which deletes the link.
  run_in_netns(s.host_netns.get(), [&] { turn_off_ipv6(s.interface); });
  s.host.add_address(s.interface, addresses.host, kPairPrefix);
  s.host.set_up(s.interface);
  run_in_netns(sandbox_netns, [] { turn_off_ipv6(kSandboxLink); });
  sandbox.add_address(kSandboxLink, addresses.sandbox, kPairPrefix);
  sandbox.set_up(kSandboxLink);
  sandbox.add_route(0, 0, addresses.host);
  enable_forwarding(s.host_netns.get());
}

HostLink::~HostLink() = default;

std::string HostLink::host_interface() const { return state_->interface; }
std::string HostLink::host_address() const { return dotted_quad(state_->addresses.host); }
std::string HostLink::sandbox_address() const { return dotted_quad(state_->addresses.sandbox); }

}  // namespace mayura::netfilter
