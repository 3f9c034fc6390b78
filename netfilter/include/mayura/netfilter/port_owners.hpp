#pragma once
// Who may connect to published ports. A port's listener is on the engine's
// 127.0.0.1, where any local user could connect; the kernel refuses all but
// the sandbox's owner and root: an nftables table in the engine's network
// namespace whose output chain resets a connection to a published port from
// any other uid (`meta skuid`, the connecting socket's owner). The table is
// the engine's own (named by its id base), made with its first port and
// removed with its last.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "mayura/base/unique_fd.hpp"

namespace mayura::netfilter {

class PortOwners {
 public:
  // `id_base` names the table: engines of distinct id ranges share no table.
  // Opens the calling thread's network namespace, where the engine listens.
  explicit PortOwners(std::uint32_t id_base);
  ~PortOwners();  // removes the table if a port is still in it
  PortOwners(const PortOwners&) = delete;
  PortOwners& operator=(const PortOwners&) = delete;

  // From now on only `owner` and root can connect to 127.0.0.1:host_port.
  // Throws SandboxError (INTERNAL) naming the step if the rule cannot be made.
  void restrict(std::uint16_t host_port, uid_t owner);
  // Forgets the port's rule (after its listener closed); never throws.
  void lift(std::uint16_t host_port) noexcept;

  const std::string& table() const { return table_; }

 private:
  std::string elements(std::uint16_t host_port, uid_t owner) const;
  void lift_locked(std::uint16_t host_port) noexcept;

  UniqueFd netns_;  // the engine's network namespace, where the table is
  std::string table_;
  std::mutex mutex_;
  std::map<std::uint16_t, uid_t> ports_;  // what the table holds: each port's owner
};

}  // namespace mayura::netfilter
