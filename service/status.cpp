#include "status.hpp"

namespace mayura::service {

int status_for(Reason reason) noexcept {
  switch (reason) {
    case Reason::INVALID_INPUT: return 400;
    case Reason::PERMISSION_DENIED: return 403;
    case Reason::GONE: return 410;
    case Reason::NOT_FOUND: return 412;
    case Reason::INVALID_CONFIG: return 424;
    case Reason::LIMIT_REACHED: return 429;
    case Reason::CANCELLED: return 499;
    case Reason::UNSUPPORTED: return 501;
    case Reason::INTERNAL: return 500;
  }
  return 500;
}

}  // namespace mayura::service
