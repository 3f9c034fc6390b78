#pragma once
// The network kind `all`: a sandbox reaches the internet through the host.
// A veth pair links the sandbox's network namespace to the engine's; the
// host end routes and masquerades the sandbox's traffic, and one nftables
// table (`ip mayura`, shared by the host's engines) keeps sandboxes away from
// the host's own services, from one another and from cloud metadata
// services, and lets nothing outside open a connection into one.

#include <cstdint>
#include <memory>
#include <string>

namespace mayura::netfilter {

struct HostLinkOptions {
  // IPv4 network the pairs of addresses come from, one /31 per slot. Every
  // engine of a host must use the same pool: the shared table masquerades
  // by it.
  std::string pool = "10.234.0.0/16";
  // flock'ed around the table's creation and removal, so two engines of one
  // host do not race; every engine of a host must pass the same file.
  std::string lock_file;
};

// Checks a pool string; throws SandboxError(INVALID_CONFIG) with a clear
// message. For the provider's option check.
void check_pool(const std::string& pool);

// Removes the host's table if no engine's link is left (an engine that died
// leaves it). For an engine, before its first link; never throws.
void remove_unused_host_table(const HostLinkOptions& options) noexcept;

// Deletes the link of `slot` an engine that ended left (and with it the
// sandbox's end of it), in the calling thread's network namespace, so that
// an engine taking that sandbox back can link it afresh. Never throws.
void remove_left_link(std::uint32_t slot) noexcept;

// One sandbox's way out to the internet. Made when the sandbox gets network
// `all`, destroyed when it ends or changes network.
class HostLink {
 public:
  // `sandbox_netns`: the sandbox's network namespace (the caller keeps the
  // fd). The host end is made in the calling thread's network namespace,
  // taken as the engine's and kept for the destructor, whichever thread runs
  // it. `slot`: small, unique among the engine's live links; it names the
  // host end (mayura<slot>) and picks the addresses. Throws SandboxError:
  // INVALID_CONFIG for a bad pool or no lock file, LIMIT_REACHED for a slot
  // beyond the pool, INTERNAL naming the failed step; nothing is left behind.
  HostLink(int sandbox_netns, std::uint32_t slot, const HostLinkOptions& options);
  // Deletes the host end (and with it the sandbox's eth0) before returning,
  // and the table if it was the host's last link. Never throws.
  ~HostLink();
  HostLink(const HostLink&) = delete;
  HostLink& operator=(const HostLink&) = delete;

  std::string host_interface() const;
  std::string host_address() const;     // dotted quad
  std::string sandbox_address() const;  // dotted quad; the sandbox's eth0

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mayura::netfilter
