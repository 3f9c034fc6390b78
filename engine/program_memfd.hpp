#pragma once
// A program the engine carries inside itself (the init, the desktop helper),
// as a sealed, executable memfd: no host file is ever reachable (or
// writable, CVE-2019-5736) from inside a sandbox, and the engine needs no
// file on disk to run it there.

#include "mayura/base/unique_fd.hpp"

namespace mayura {

// The bytes [begin, end) in a memfd named `name`, read-only and sealed.
UniqueFd program_memfd(const char* name, const char* begin, const char* end);

}  // namespace mayura
