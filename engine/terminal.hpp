#pragma once
// A command's pseudo-terminal, made in the sandbox's own devpts instance (its
// /dev/pts), so that inside it is a terminal of the sandbox's like any other
// (`tty` names it) and nothing of the host's.

#include "mayura/base/unique_fd.hpp"
#include "mayura/types.hpp"

namespace mayura::native {

struct Terminal {
  UniqueFd master;  // the engine's end: non-blocking, close-on-exec
  UniqueFd slave;   // the command's: its stdin, stdout and stderr
};

// A new terminal of `size` from the devpts under `root` (the init's root
// directory), reached without following any link the sandbox could have
// made. Throws SandboxError (INTERNAL) naming the step that failed.
Terminal open_terminal(int root, TerminalSize size);

// Sets the terminal's size; the kernel signals its foreground job
// (SIGWINCH). False if the terminal is gone.
bool resize_terminal(int master, TerminalSize size) noexcept;

}  // namespace mayura::native
