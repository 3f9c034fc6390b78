#pragma once
// exec of the command backend: start in the background, poll to the end.

#include <string>
#include <vector>

#include "command_channel.hpp"
#include "mayura/types.hpp"

namespace mayura::detail {

ExecResult run_command(CommandChannel& channel, const std::vector<std::string>& argv, const ExecOptions& options);

}  // namespace mayura::detail
