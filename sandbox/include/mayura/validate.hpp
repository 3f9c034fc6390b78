#pragma once
// The checks the limits layer runs on every argument. Public so that a
// provider or a tool can refuse bad input with the same words.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/types.hpp"

namespace mayura {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxCommandBytes = 128 * 1024;  // argv and env of one exec together
constexpr std::size_t kMaxEnvEntries = 1024;
constexpr std::size_t kMaxLabelBytes = 256;
constexpr std::size_t kMaxSeccompProfileBytes = 1 << 20;

// Each throws SandboxError(INVALID_INPUT) naming what is wrong.
void check_path(std::string_view path, std::string_view what = "path");
void check_env(const std::map<std::string, std::string>& env);
void check_argv(const std::vector<std::string>& argv);
void check_port(int port);
void check_domain_pattern(std::string_view pattern);
void check_labels(const std::map<std::string, std::string>& labels);

}  // namespace mayura
