#pragma once
// Live restore, the server's half: what the server keeps with each sandbox
// (its id, owner, creation and options, as JSON) for the server that comes
// after it, and that server taking back what the provider restored.

#include <string>

#include "mayura/provider.hpp"
#include "mayura/sandboxes.hpp"
#include "registry.hpp"

namespace mayura::service {

// The record a sandbox keeps (Sandbox::keep).
std::string kept_record(const Owned& owned);

// Every sandbox the provider took back as it started, served again under
// its id and owner; one whose record cannot be read is released, and said
// so on stderr. Returns how many were taken back.
std::size_t take_back_sandboxes(SandboxProvider& provider, const Sandboxes& sandboxes, Registry& registry);

}  // namespace mayura::service
