#pragma once
// The HTTP status the service answers a failure with: the one that
// sandbox_http_failure maps back to the same reason.

#include "mayura/errors.hpp"

namespace mayura::service {

int status_for(Reason reason) noexcept;

}  // namespace mayura::service
