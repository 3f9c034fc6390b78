#include "mayura/errors.hpp"
#include "mayura/provider.hpp"
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

SandboxError::SandboxError(Reason reason, const std::string& message) : std::runtime_error(message), reason_(reason) {}

SandboxError sandbox_http_failure(int status) {
  Reason reason = Reason::INTERNAL;
  switch (status) {
    case 400:
    case 409:
    case 422: reason = Reason::INVALID_INPUT; break;
    case 401:
    case 403: reason = Reason::PERMISSION_DENIED; break;
    case 404:
    case 410: reason = Reason::GONE; break;
    case 412: reason = Reason::NOT_FOUND; break;
    case 413:
    case 429: reason = Reason::LIMIT_REACHED; break;
    case 424: reason = Reason::INVALID_CONFIG; break;
    case 499: reason = Reason::CANCELLED; break;
    case 501: reason = Reason::UNSUPPORTED; break;
    default: break;
  }
  return SandboxError(reason, "the provider answered HTTP " + std::to_string(status));
}

std::string_view network_kind_name(NetworkKind kind) noexcept {
  switch (kind) {
    case NetworkKind::none: return "none";
    case NetworkKind::all: return "all";
    case NetworkKind::allowlist: return "allow";
  }
  return "none";
}

void SandboxBackend::set_network(const Network&) {
  throw SandboxError(Reason::UNSUPPORTED, "the provider cannot change a running sandbox's network");
}

void SandboxBackend::pause() { throw SandboxError(Reason::UNSUPPORTED, "the provider cannot pause a sandbox"); }

void SandboxBackend::resume() { throw SandboxError(Reason::UNSUPPORTED, "the provider cannot pause a sandbox"); }

Snapshot SandboxBackend::snapshot(const std::string&, const std::string&) {
  throw SandboxError(Reason::UNSUPPORTED, "the provider cannot snapshot a sandbox");
}

std::vector<std::unique_ptr<SandboxBackend>> SandboxBackend::fork(int, const CreateOptions&) { return {}; }

void SandboxBackend::keep(const std::string&) {
  throw SandboxError(Reason::INVALID_INPUT, "the provider's sandboxes end with its process: nothing is kept");
}

std::vector<SandboxProvider::Restored> SandboxProvider::restore() { return {}; }

Volume SandboxProvider::create_volume(const std::string&, const std::string&, std::int64_t) {
  throw SandboxError(Reason::UNSUPPORTED, "the provider has no volumes");
}

std::vector<Volume> SandboxProvider::volumes(const std::string&) { return {}; }

void SandboxProvider::delete_volume(const std::string&, const std::string& name) {
  throw SandboxError(Reason::NOT_FOUND, "there is no volume named " + name);
}

std::vector<Snapshot> SandboxProvider::snapshots(const std::string&) { return {}; }

void SandboxProvider::delete_snapshot(const std::string&, const std::string& name) {
  throw SandboxError(Reason::NOT_FOUND, "there is no snapshot named " + name);
}

// The token by value, as every provider call takes it.
// NOLINTNEXTLINE(performance-unnecessary-value-param)
std::string SandboxBackend::desktop(const DesktopAction&, std::stop_token) {
  throw SandboxError(Reason::UNSUPPORTED, "the provider has no desktop");
}

}  // namespace mayura
