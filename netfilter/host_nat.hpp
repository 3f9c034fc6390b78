#pragma once
// The host's side of the way out for sandboxes with network `all`: IPv4
// forwarding, and one nftables table `ip mayura` shared by every engine of
// the host, present while any of their `mayura*` links exists.

#include <string>

#include "address_pool.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::netfilter {

class RouteSocket;

// Every host-side link of a sandbox is named this and its slot.
inline constexpr const char* kHostLinkPrefix = "mayura";

// An exclusive flock on `path` (made if missing), held for its life. It
// orders every engine's changes to the table and to the set of mayura*
// links: a table removed because no link is left cannot race with a link
// being made.
class TableLock {
 public:
  explicit TableLock(const std::string& path);

 private:
  UniqueFd fd_;
};

// (Re)defines the table in the namespace `host_netns`, in one transaction.
// Call under the lock.
void define_nat_table(int host_netns, const AddressPool& pool);

// Removes the table if `host` (a socket of the same namespace) has no
// mayura* link left. Call under the lock.
void remove_nat_table_if_unused(int host_netns, RouteSocket& host);

// Turns IPv4 forwarding on in `host_netns` if it is off. It stays on after
// the last link goes: something else on the host may have come to rely on
// it meanwhile, and forwarding with no route into a sandbox opens nothing.
void enable_forwarding(int host_netns);

// The table, as nft reads it (for tests and for reading).
std::string nat_table_rules(const AddressPool& pool);

}  // namespace mayura::netfilter
