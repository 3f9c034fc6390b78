#pragma once
// nftables rules, through libnftables (the library firewalld uses): never by
// running the nft program. The commands are nft's own language.

#include <string>

namespace mayura::netfilter {

struct NftResult {
  bool ok = false;
  std::string output;  // what a list command printed
  std::string error;   // libnftables' message when it failed
};

// Runs `commands` (nft syntax) in the network namespace `netns_fd`, as one
// transaction: all of it or nothing. The work happens on a short-lived
// thread that enters the namespace, so the caller's thread never changes
// namespace.
NftResult run_nft(int netns_fd, const std::string& commands) noexcept;

}  // namespace mayura::netfilter
