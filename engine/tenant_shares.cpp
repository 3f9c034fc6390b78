#include "tenant_shares.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "sys_error.hpp"

namespace mayura::native {

std::uint32_t TenantShares::weight_for(std::size_t sandboxes) {
  const std::size_t split = std::bit_ceil(std::max<std::size_t>(sandboxes, 1));
  return static_cast<std::uint32_t>(std::max<std::size_t>(kTenantWeight / split, 1));
}

TenantShares::Member& TenantShares::Member::operator=(Member&& other) noexcept {
  if (this != &other) {
    leave();
    shares_ = std::move(other.shares_);
    tenant_ = std::move(other.tenant_);
    cgroup_ = std::exchange(other.cgroup_, nullptr);
  }
  return *this;
}

void TenantShares::Member::leave() noexcept {
  if (shares_ && cgroup_) shares_->leave(tenant_, cgroup_);
  shares_.reset();
  cgroup_ = nullptr;
}

TenantShares::Member TenantShares::join(const std::string& tenant, const cgroups::SandboxCgroup& cgroup) {
  Member member;
  if (tenant.empty()) {
    if (const int error = cgroup.set_cpu_weight(kTenantWeight)) fail_step("setting the sandbox's cpu weight", error);
    return member;
  }
  std::lock_guard lock(mutex_);
  std::vector<const cgroups::SandboxCgroup*>& sandboxes = tenants_[tenant];
  const std::uint32_t before = weight_for(sandboxes.size());
  const std::uint32_t now = weight_for(sandboxes.size() + 1);
  if (const int error = cgroup.set_cpu_weight(now)) {
    if (sandboxes.empty()) tenants_.erase(tenant);
    fail_step("setting the sandbox's cpu weight", error);
  }
  if (now != before) reweigh(sandboxes, now);
  sandboxes.push_back(&cgroup);
  member.shares_ = shared_from_this();
  member.tenant_ = tenant;
  member.cgroup_ = &cgroup;
  return member;
}

void TenantShares::leave(const std::string& tenant, const cgroups::SandboxCgroup* cgroup) noexcept {
  std::lock_guard lock(mutex_);
  const auto found = tenants_.find(tenant);
  if (found == tenants_.end()) return;
  std::vector<const cgroups::SandboxCgroup*>& sandboxes = found->second;
  std::erase(sandboxes, cgroup);
  if (sandboxes.empty()) {
    tenants_.erase(found);
    return;
  }
  const std::uint32_t now = weight_for(sandboxes.size());
  if (now != weight_for(sandboxes.size() + 1)) reweigh(sandboxes, now);
}

void TenantShares::reweigh(const std::vector<const cgroups::SandboxCgroup*>& sandboxes, std::uint32_t weight) noexcept {
  for (const cgroups::SandboxCgroup* sandbox : sandboxes) sandbox->set_cpu_weight(weight);
}

std::size_t TenantShares::count(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  const auto found = tenants_.find(tenant);
  return found == tenants_.end() ? 0 : found->second.size();
}

}  // namespace mayura::native
