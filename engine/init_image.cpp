#include "init_image.hpp"

#include "program_memfd.hpp"

extern "C" const char mayura_init_blob[];
extern "C" const char mayura_init_blob_end[];

namespace mayura {

UniqueFd make_init_memfd() { return program_memfd("mayura-init", mayura_init_blob, mayura_init_blob_end); }

}  // namespace mayura
