#pragma once
// The in-sandbox init ships inside the library and runs from a sealed memfd:
// no host binary is ever reachable (or writable, CVE-2019-5736) from inside,
// and the engine needs no file on disk to start a sandbox.

#include "mayura/base/unique_fd.hpp"

namespace mayura {

// A sealed, executable memfd holding the init. Made once per provider.
UniqueFd make_init_memfd();

}  // namespace mayura
