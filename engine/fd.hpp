#pragma once
// An owned file descriptor (shared with the init through rootfs).

#include "mayura/rootfs/unique_fd.hpp"
