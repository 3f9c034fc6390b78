#include "mayura/errors.hpp"
#include "mayura/types.hpp"

namespace mayura {

std::string_view reason_name(Reason reason) noexcept {
  switch (reason) {
    case Reason::INVALID_INPUT: return "INVALID_INPUT";
    case Reason::INVALID_CONFIG: return "INVALID_CONFIG";
    case Reason::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case Reason::GONE: return "GONE";
    case Reason::CANCELLED: return "CANCELLED";
    case Reason::LIMIT_REACHED: return "LIMIT_REACHED";
    case Reason::NOT_FOUND: return "NOT_FOUND";
    case Reason::UNSUPPORTED: return "UNSUPPORTED";
    case Reason::INTERNAL: return "INTERNAL";
  }
  return "INTERNAL";
}

SandboxError::SandboxError(Reason reason, const std::string& message)
    : std::runtime_error(message), reason_(reason) {}

std::string_view network_kind_name(NetworkKind kind) noexcept {
  switch (kind) {
    case NetworkKind::none: return "none";
    case NetworkKind::all: return "all";
    case NetworkKind::allowlist: return "allow";
  }
  return "none";
}

}  // namespace mayura
