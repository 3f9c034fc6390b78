#pragma once
// The desktop of a native sandbox: its X server (Xvfb from the image, on
// display :0), started at create, and each action, all done by
// mayura-desktop (desktop/helper) run as one of the sandbox's commands, as
// the sandbox user under its filter. The engine reads only the helper's
// exit code and its answer (a PNG handed on as bytes, or "X Y"), never what
// the sandbox's X server sends.

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/types.hpp"
#include "native_sandbox.hpp"

namespace mayura::native {

// The helper, in a sealed memfd: made once per provider.
UniqueFd make_desktop_helper_memfd();

// Starts the X server of a sandbox created with a desktop, and returns once
// it takes connections. INVALID_CONFIG when the image has no Xvfb.
void start_desktop(const std::shared_ptr<SandboxCore>& core, const DesktopSize& size,
                   const std::stop_token& cancellation);

// The helper's arguments for an action: key names and text are checked
// and become keysyms here, before anything runs (INVALID_INPUT).
std::vector<std::string> desktop_helper_args(const DesktopAction& action);

// Runs one action in the command cgroup `cgroup_name`: what the helper
// answered. An X server that is gone, or that does not answer (a command
// holds it grabbed), fails INTERNAL and says so; the sandbox lives on.
std::string run_desktop_action(const std::shared_ptr<SandboxCore>& core, std::string cgroup_name,
                               const DesktopAction& action, const std::stop_token& cancellation);

}  // namespace mayura::native
