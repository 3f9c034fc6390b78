#pragma once
// What the limits layer checks of a create before the provider sees it: the
// lifetime, the network, the identity, the operator's ceilings and the
// form of every other option. Each failure is a SandboxError naming what
// is wrong (INVALID_INPUT; PERMISSION_DENIED for a network not allowed).

#include <cstdint>

#include "mayura/sandboxes.hpp"

namespace mayura::detail {

// Whether a provider with `f` can enforce a network of `kind`.
bool supports(const Features& f, NetworkKind kind);

// A network a create or set_network asks for: well formed, enforceable by
// the provider, and permitted where the sandboxes were set up.
void check_network(const SandboxesOptions& limits, const Features& features, const Network& network);

// A whole create; `provider_max`: the provider's own longest lifetime (0:
// none).
void check_create(const SandboxesOptions& limits, const Features& features, std::int64_t provider_max,
                  const CreateOptions& o);

}  // namespace mayura::detail
