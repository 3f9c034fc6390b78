#pragma once
// Links inside a sandbox's network namespace, through netlink (libnl-route).

#include <cstdint>

namespace mayura::netfilter {

// Brings up `lo` in the network namespace `netns_fd`. The work happens on a
// short-lived thread that enters the namespace, so the caller's thread (and
// the host process) never changes namespace. 0, or an errno value.
int bring_up_loopback(int netns_fd) noexcept;

// Adds address/prefix (host byte order) to `lo` in `netns_fd`. On loopback
// the whole prefix becomes local, so one address makes a range answerable.
// 0 (also if it is there already), or an errno value.
int add_loopback_address(int netns_fd, std::uint32_t address, int prefix) noexcept;

}  // namespace mayura::netfilter
