#include "tenant_dirs.hpp"

#include <algorithm>

#include "mayura/errors.hpp"

namespace mayura::native {

std::string tenant_dir(const std::string& root, const std::string& tenant) {
  if (tenant.empty()) return root + "/local";
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
