#pragma once
// One command's run in a native sandbox.

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "mayura/types.hpp"
#include "native_sandbox.hpp"

namespace mayura::native {

using ExecDone = std::function<void(std::exception_ptr, ExecResult)>;

// Starts `argv` in the sandbox (in the command cgroup `cgroup_name`, in the
// absolute directory `cwd`) and supervises it on `executor` to its end, its
// timeout or the caller's cancellation; `done` gets its result, once. What
// fails before the command starts is thrown here, and `done` is not called.
// With `program` (a sealed memfd of the provider's, open while the command
// starts) that is what runs, not argv[0] from the sandbox's PATH.
void start_command(std::shared_ptr<SandboxCore> core, std::string cgroup_name, std::string cwd,
                   std::vector<std::string> argv, ExecOptions options, const boost::asio::any_io_executor& executor,
                   ExecDone done, int program = -1);

// Read-only /dev/null, the input of every command given none: opened once
// for the process (the provider opens it at its start, so the engine's
// descriptors do not change with its first command).
int dev_null();

// The same, supervised on the calling thread (its callbacks run there too).
ExecResult run_command(std::shared_ptr<SandboxCore> core, std::string cgroup_name, std::string cwd,
                       std::vector<std::string> argv, ExecOptions options, int program = -1);

}  // namespace mayura::native
