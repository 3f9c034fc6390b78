#pragma once
// One command's run in a native sandbox.

#include <string>
#include <vector>

#include "mayura/types.hpp"
#include "native_sandbox.hpp"

namespace mayura::native {

// Starts `argv` in the sandbox (in the command cgroup `cgroup_name`, in the
// absolute directory `cwd`), supervises it to its end, its timeout or the
// caller's cancellation, and gives its result.
ExecResult run_command(SandboxCore& core, const std::string& cgroup_name, const std::string& cwd,
                       const std::vector<std::string>& argv, const ExecOptions& options);

}  // namespace mayura::native
