#pragma once
// What a run (mayura_run.cpp) and an MCP session (run_mcp.cpp) share: the one
// sandbox's options from mayura-run's command line, the sandboxes it is made
// in, the host files it reads and how it writes to its own output.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "mayura/provider.hpp"
#include "mayura/sandboxes.hpp"
#include "run_args.hpp"

namespace mayura::tools {

// The sandbox's options as the command line gives them; `seccomp_profile`
// is --seccomp's file, read.
CreateOptions create_options(const Args& args, std::optional<std::string> seccomp_profile);

// The sandboxes the run's one sandbox is made in, over `provider` (that of
// the daemon at `daemon`; empty: an engine in this process). Whoever runs
// mayura-run decides the network on its command line. Without --lifetime, a
// daemon's maximum (when lower) becomes `create`'s lifetime. What the
// options need that the provider cannot do (a snapshot after the run,
// volumes) is INVALID_INPUT here, before anything is made.
Sandboxes run_sandboxes(const std::shared_ptr<SandboxProvider>& provider, const std::string& daemon, const Args& args,
                        CreateOptions& create);

// A host file's bytes (--copy-in's, --seccomp's); INVALID_INPUT naming it
// when it cannot be read (thrown, not exited on: an engine in this process
// may be up by then, and must be shut down on the way out).
std::string read_host_file(const std::string& path);

// All of `chunk` to `fd`; false when the reader is gone (EPIPE, or another
// failure to write).
bool write_out(int fd, std::string_view chunk);

// Where a refusal says the run would have gone: the daemon, or this engine.
std::string engine_name(const std::string& daemon);

}  // namespace mayura::tools
