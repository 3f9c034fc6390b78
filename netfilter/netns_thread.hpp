#pragma once
// Work that must happen inside a network namespace (making a netlink socket
// there, opening its /proc/sys/net files) runs on a short-lived thread that
// enters it, so the caller's thread never changes namespace.

#include <functional>

namespace mayura::netfilter {

// Runs `work` on a new thread inside the network namespace `netns_fd` and
// waits for it. Rethrows what `work` throws; throws SandboxError(INTERNAL)
// if the namespace cannot be entered.
void run_in_netns(int netns_fd, const std::function<void()>& work);

}  // namespace mayura::netfilter
