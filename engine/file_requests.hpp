#pragma once
// read_file, write_file, list and remove of a native sandbox. `absolute` is
// the path inside the sandbox; `path` is the caller's, for messages.

#include <string>
#include <string_view>
#include <vector>

#include "mayura/types.hpp"
#include "native_sandbox.hpp"

namespace mayura::native::files {

std::string read(SandboxCore& core, const std::string& absolute, const std::string& path, const ReadOptions& options);
void write(SandboxCore& core, const std::string& absolute, const std::string& path, std::string_view data,
           const FileOptions& options);
std::vector<FileEntry> list(SandboxCore& core, const std::string& absolute, const std::string& path,
                            const FileOptions& options);
void remove(SandboxCore& core, const std::string& absolute, const std::string& path, const FileOptions& options);

}  // namespace mayura::native::files
