#pragma once
// The host's cpu, when contended, shared by tenant (a daemon's client):
// every tenant weighs the same, whatever number of sandboxes it runs, and
// its weight is split among them. Without it a tenant with ten sandboxes
// gets ten times the cpu of one with a single sandbox, since the kernel
// weighs each sandbox's cgroup alike.
//
// A sandbox's weight is the tenant's over its count of sandboxes rounded
// up to a power of two, so the weights of a tenant's other sandboxes are
// rewritten only when that power changes: a create or a release costs
// about one cgroup write however many sandboxes the tenant has.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cgroups.hpp"

namespace mayura::native {

class TenantShares : public std::enable_shared_from_this<TenantShares> {
 public:
  // A tenant's whole weight: a sandbox alone in its tenant has it.
  static constexpr std::uint32_t kTenantWeight = 1024;
  // The weight of each of a tenant's `sandboxes` sandboxes (at least 1).
  static std::uint32_t weight_for(std::size_t sandboxes);

  // One sandbox's place in its tenant, until it ends or this goes.
  class Member {
   public:
    Member() = default;
    Member(Member&& other) noexcept { *this = std::move(other); }
    Member& operator=(Member&& other) noexcept;
    ~Member() { leave(); }
    // Leaves the tenant: its other sandboxes may weigh more from now.
    void leave() noexcept;

   private:
    friend class TenantShares;
    std::shared_ptr<TenantShares> shares_;
    std::string tenant_;
    const cgroups::SandboxCgroup* cgroup_ = nullptr;
  };

  // Puts the sandbox whose cgroup is `cgroup` into `tenant` (empty: a
  // tenant of its own) and writes its weight, and the tenant's other
  // sandboxes' if theirs changes. `cgroup` must outlive the member. Throws
  // SandboxError naming the file if the sandbox's own weight cannot be
  // written; another sandbox's that cannot (it is ending) is passed over.
  Member join(const std::string& tenant, const cgroups::SandboxCgroup& cgroup);

  // How many sandboxes `tenant` has (for tests).
  std::size_t count(const std::string& tenant);

 private:
  void leave(const std::string& tenant, const cgroups::SandboxCgroup* cgroup) noexcept;
  // Rewrites every sandbox of a tenant to `weight`; under mutex_.
  static void reweigh(const std::vector<const cgroups::SandboxCgroup*>& sandboxes, std::uint32_t weight) noexcept;

  std::mutex mutex_;
  std::map<std::string, std::vector<const cgroups::SandboxCgroup*>> tenants_;
};

}  // namespace mayura::native
