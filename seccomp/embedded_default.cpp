// The built-in profile as the build compiled it (see gen_default.cpp).

#include "mayura/seccomp/profile.hpp"

extern "C" const char mayura_seccomp_default_blob[];
extern "C" const char mayura_seccomp_default_blob_end[];

namespace mayura::seccomp {

Program default_program() { return Program(mayura_seccomp_default_blob, mayura_seccomp_default_blob_end); }

}  // namespace mayura::seccomp
