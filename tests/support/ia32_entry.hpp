#pragma once
// The i386 system call entry, `int $0x80`, from a 64-bit process, and what
// this host does with it unfiltered: a kernel with IA32 emulation runs the
// call; one built without it, or with it turned off at boot
// (ia32_emulation=0, as on some hosts of the project's own kind), answers
// the instruction with SIGSEGV. The tests that show a filter keeps that
// entry shut ask the host first, so they pass on both kinds and say which
// one they ran on.

#if defined(__x86_64__)

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mayura::testing {

// i386 getpid (20) through int $0x80: its result. Only for a process made to
// take the fault: SIGSEGV gets its default action first, since a sanitizer's
// own handler (ASan's) would turn the fault into an abort, and the test
// would read the sanitizer's signal instead of the kernel's.
inline long int80_getpid_in_child() {
  ::signal(SIGSEGV, SIG_DFL);
  long ret = 20;
  asm volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

enum class Ia32Entry { runs, faults, other };

// What the entry does on this host, with no filter: asked of a child.
inline Ia32Entry host_ia32_entry() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(int80_getpid_in_child() == ::getpid() ? 0 : 1);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) return Ia32Entry::other;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Ia32Entry::runs;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) return Ia32Entry::faults;
  return Ia32Entry::other;
}

inline const char* describe(Ia32Entry entry) {
  switch (entry) {
    case Ia32Entry::runs: return "this host runs int $0x80 (IA32 emulation on)";
    case Ia32Entry::faults: return "this host answers int $0x80 with SIGSEGV (no IA32 emulation)";
    case Ia32Entry::other: break;
  }
  return "this host's int $0x80 neither ran nor faulted with SIGSEGV";
}

}  // namespace mayura::testing

#endif
