// The built-in profiles as the build compiled them (see gen_profile.cpp).

#include "mayura/seccomp/profile.hpp"

extern "C" const char mayura_seccomp_default_blob[];
extern "C" const char mayura_seccomp_default_blob_end[];
extern "C" const char mayura_seccomp_baseline_blob[];
extern "C" const char mayura_seccomp_baseline_blob_end[];

namespace mayura::seccomp {

Program default_program() { return Program(mayura_seccomp_default_blob, mayura_seccomp_default_blob_end); }

Program baseline_program() { return Program(mayura_seccomp_baseline_blob, mayura_seccomp_baseline_blob_end); }

}  // namespace mayura::seccomp
