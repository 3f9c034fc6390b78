#pragma once
// Links inside a sandbox's network namespace, through netlink (libnl-route).

namespace mayura::netfilter {

// Brings up `lo` in the network namespace `netns_fd`. The work happens on a
// short-lived thread that enters the namespace, so the caller's thread (and
// the host process) never changes namespace. 0, or EPERM.
int bring_up_loopback(int netns_fd) noexcept;

}  // namespace mayura::netfilter
