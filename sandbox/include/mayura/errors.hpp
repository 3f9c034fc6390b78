#pragma once
// The one error type of the contract. Every failure a caller sees is a
// SandboxError whose reason tells what kind of failure it was; the message is
// ours, never a provider's raw text.

#include <stdexcept>
#include <string>
#include <string_view>

namespace mayura {

enum class Reason {
  INVALID_INPUT,      // the call's arguments are wrong (a bad path, a feature the provider lacks)
  INVALID_CONFIG,     // the set-up is wrong (an image that is not there)
  PERMISSION_DENIED,  // not allowed (a network kind not listed in create_sandboxes)
  GONE,               // the sandbox (or the Sandboxes) was released, closed or outlived its lifetime
  CANCELLED,          // the caller cancelled the operation
  LIMIT_REACHED,      // a count or size bound was hit (max_sandboxes, a file too large)
  NOT_FOUND,          // the path does not exist in the sandbox
  UNSUPPORTED,        // the host or provider cannot do this at all
  INTERNAL,           // the provider failed; the message says at which step
};

std::string_view reason_name(Reason reason) noexcept;

class SandboxError : public std::runtime_error {
 public:
  SandboxError(Reason reason, const std::string& message);
  Reason reason() const noexcept { return reason_; }

 private:
  Reason reason_;
};

// For providers that speak HTTP: the SandboxError for a failed status, with
// our words only (the seed's sandboxHttpFailure). 400 and 422 INVALID_INPUT,
// 401 and 403 PERMISSION_DENIED, 404 and 410 GONE (the sandbox is not
// there), 408 and 504 INTERNAL (a timeout of the provider's), 409
// INVALID_INPUT, 413 and 429 LIMIT_REACHED, 501 UNSUPPORTED, anything else
// INTERNAL. mayurad's own statuses for the reasons the seed gives none: 412
// NOT_FOUND (a path in the sandbox), 424 INVALID_CONFIG, 499 CANCELLED.
SandboxError sandbox_http_failure(int status);

}  // namespace mayura
