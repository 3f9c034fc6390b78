#pragma once
// Where mayura-run's sandbox comes from, and what only an engine in this
// process can do. Two programs share mayura-run's main (mayura_run.cpp):
// mayura-run itself, a light client of mayurad that links no engine (so a
// run through a warm daemon starts in a fraction of the time), and
// mayura-run-local, which holds the engine (run_local.cpp). The client hands
// whatever needs an engine over to mayura-run-local, with the same command
// line and before it has read any input (run_client.cpp).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mayura/provider.hpp"

namespace mayura::tools {

inline constexpr const char* kDefaultDaemonSocket = "/run/mayura/mayurad.sock";

struct RunEngine {
  // The provider, made at the first call: a daemon's is asked for its
  // features then, which a run with nothing to do but its command (run())
  // never needs.
  std::function<std::shared_ptr<SandboxProvider>()> provider;
  std::string daemon;  // the daemon's address; empty: an engine in this process
  // Through a daemon: the command in a sandbox made for it, one request.
  std::function<ExecResult(const CreateOptions&, const std::vector<std::string>&, const ExecOptions&)> run;
};

// ---- the same in both programs (run_daemon.cpp) ----

// The daemon a run goes through: the one MAYURA_HOST names, else the default
// socket when a daemon answers there; nothing with `local`, or when nobody
// listens on the default socket (a file left by a daemon that died). A
// socket that refuses this user is PERMISSION_DENIED (for a user other than
// root, who could run an engine itself).
std::optional<std::string> daemon_address(bool local);
// A provider over the daemon at `address`, with the token and CA the
// environment names.
RunEngine remote_engine(const std::string& address);
// One line for `mayura-run doctor`: which engine a run would use.
std::string describe_engine_choice(bool local);

// Defined by the shared main: the message, then exit status 125.
[[noreturn]] void usage_error(const std::string& message);

// ---- what each program does its own way ----

// The client keeps its command line for a hand-over.
void keep_command_line(char** argv);
// The daemon's provider, or an engine in this process (`local` forces that).
// A daemon that MAYURA_HOST names and that does not answer is a failure
// (INTERNAL naming it) when the run starts, never a silent fall back.
RunEngine choose_engine(bool local);
// `--version` and `doctor`: the version, this host's cgroups, the choice.
std::string describe_host(bool local);
// An image's Entrypoint followed by its Cmd, as `docker run IMAGE` runs.
std::vector<std::string> image_default_command(const std::string& image);
// mayura-run image import|list|inspect|rm; argv[0] is "image".
int run_image_command(int argc, char** argv);

}  // namespace mayura::tools
