#pragma once
// The engine's stores kept per tenant (snapshots, volumes): one directory
// per tenant under the store's, its name the tenant's bytes in hex, so that
// any tenant string is a safe directory name and no two tenants share one;
// and the names of what is kept in them, one plain path component each.

#include <cstddef>
#include <string>

namespace mayura::native {

// Makes `dir` (0700: root's alone) and whatever is missing above it (0755),
// as the engine's state directories are made; `what` names it in a
// failure ("the snapshot directory").
void make_engine_dir(const std::string& dir, const std::string& what);

inline constexpr std::size_t kMaxStoredTenantBytes = 120;

// The directory of `tenant` under `root` ("local" for the empty tenant);
// INVALID_INPUT for a tenant over kMaxStoredTenantBytes.
std::string tenant_dir(const std::string& root, const std::string& tenant);

// INVALID_INPUT unless `name` is 1 to 128 of A-Z a-z 0-9 . _ - ~, not
// starting with a dot (the engine's own temporary files do). `what`:
// "snapshot", "volume".
void check_stored_name(const std::string& name, const std::string& what);

}  // namespace mayura::native
