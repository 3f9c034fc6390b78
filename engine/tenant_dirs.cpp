#include "tenant_dirs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "mayura/errors.hpp"
#include "sys_error.hpp"

namespace mayura::native {

namespace {

// Each missing directory of `dir`, 0755, from the top down.
void make_parents(const std::string& dir, const std::string& what) {
  if (dir.empty() || dir == "/") return;
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return;
  if (errno != ENOENT) fail_step("making " + what + "'s parent " + dir, errno);
  make_parents(dir.substr(0, dir.find_last_of('/')), what);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail_step("making " + what + "'s parent " + dir, errno);
}

}  // namespace

void make_engine_dir(const std::string& dir, const std::string& what) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return;
  if (errno == ENOENT) {
    make_parents(dir.substr(0, dir.find_last_of('/')), what);
    if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return;
  }
  fail_step("making " + what + " " + dir, errno);
}

std::string tenant_dir(const std::string& root, const std::string& tenant) {
  if (tenant.empty()) return root + "/local";
  // Its hex must fit a file name (255 bytes).
  if (tenant.size() > kMaxStoredTenantBytes) {
    throw SandboxError(Reason::INVALID_INPUT, "a tenant's name of " + std::to_string(tenant.size()) +
                                                  " bytes is too long to keep snapshots or volumes for (at most " +
                                                  std::to_string(kMaxStoredTenantBytes) + ")");
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string dir = root + "/t-";
  for (const unsigned char c : tenant) {
    dir += kDigits[c >> 4];
    dir += kDigits[c & 15];
  }
  return dir;
}

void check_stored_name(const std::string& name, const std::string& what) {
  const bool plain =
      !name.empty() && name.size() <= 128 && name.front() != '.' && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-' || c == '~';
      });
  if (!plain) throw SandboxError(Reason::INVALID_INPUT, "\"" + name + "\" is not a " + what + "'s name");
}

}  // namespace mayura::native
