// mayura-run, the light client: a run through a daemon on a unix socket is
// made here, with no engine or OpenSSL linked in; everything else (a daemon
// over https, an engine in this process, the image store, this host's
// report) is handed over to mayura-run-local by exec, with the same command
// line, before any input has been read.

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "run_engine.hpp"

namespace mayura::tools {
namespace {

char** command_line = nullptr;

constexpr const char* kLocalProgram = "mayura-run-local";

// Next to this program (a build tree), else where the install puts it.
std::string local_program() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/') + 1);
  for (const std::string& candidate : {dir + kLocalProgram, dir + MAYURA_LIBEXEC_FROM_BIN + "/" + kLocalProgram}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return dir + MAYURA_LIBEXEC_FROM_BIN + "/" + kLocalProgram;
}

[[noreturn]] void hand_over() {
  const std::string program = local_program();
  ::execv(program.c_str(), command_line);
  std::fprintf(stderr, "mayura-run: INTERNAL: cannot run %s (which holds the engine): %s\n", program.c_str(),
               std::strerror(errno));
  std::exit(125);
}

}  // namespace

void keep_command_line(char** argv) { command_line = argv; }

RunEngine choose_engine(bool local) {
  // TLS is mayura-run-local's: a daemon across a network costs more than
  // loading OpenSSL does, a local one less.
  if (auto address = daemon_address(local); address && address->rfind("https://", 0) != 0)
    return remote_engine(*address);
  hand_over();
}

std::string describe_host(bool) { hand_over(); }

// Of this host's image store: the engine's side reads it.
std::vector<std::string> image_default_command(const std::string&) { hand_over(); }

int run_image_command(int, char**) { hand_over(); }

}  // namespace mayura::tools
