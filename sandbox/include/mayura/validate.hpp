#pragma once
// The checks the limits layer runs on every argument. Public so that a
// provider or a tool can refuse bad input with the same words.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/types.hpp"

namespace mayura {

constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxCommandBytes = 128 * 1024;  // argv and env of one exec together
constexpr std::size_t kMaxEnvEntries = 1024;
constexpr std::size_t kMaxLabelBytes = 256;
constexpr std::size_t kMaxTenantBytes = 1024;  // CreateOptions::tenant
constexpr std::size_t kMaxSeccompProfileBytes = 1 << 20;
constexpr std::size_t kMaxAllowedDomains = 1024;  // entries of one allowlist network
// A desktop's screen: from 64x64 to 3840x2160 (4K).
constexpr int kMinDesktopSide = 64;
constexpr int kMaxDesktopWidth = 3840;
constexpr int kMaxDesktopHeight = 2160;
constexpr std::size_t kMaxDesktopTextBytes = 64 * 1024;  // of one type or key action
constexpr std::size_t kMaxDragPoints = 1000;

// Each throws SandboxError(INVALID_INPUT) naming what is wrong.
void check_path(std::string_view path, std::string_view what = "path");
void check_env(const std::map<std::string, std::string>& env);
// A terminal's rows and columns, each 1 to 1000.
void check_terminal_size(const TerminalSize& size);
// A signal's number: 1 to 64.
void check_signal(int signal);
void check_argv(const std::vector<std::string>& argv);
void check_port(int port);
void check_domain_pattern(std::string_view pattern);

// An allowlist entry: `example.com`, `*.example.com` (subdomains at any
// depth, not the domain), either with `:PORT`.
struct DomainPattern {
  std::string domain;  // normalized, as normalize_domain gives it
  bool subdomains = false;
  std::optional<std::uint16_t> port;
};
// Throws SandboxError(INVALID_INPUT) as check_domain_pattern does.
DomainPattern parse_domain_pattern(std::string_view pattern);

// A host name as allowlists compare it: lower case, one trailing dot
// dropped. Empty if it is no DNS name, or is an address (a numeric
// top-level domain).
std::string normalize_domain(std::string_view name);
void check_labels(const std::map<std::string, std::string>& labels);
// A snapshot's name: 1 to 64 of A-Z a-z 0-9 . _ -, a letter or digit first
// (a name that reads the same in a path, a URL and a shell).
void check_snapshot_name(std::string_view name);
// A volume's name, as a snapshot's.
void check_volume_name(std::string_view name);
void check_desktop_size(const DesktopSize& size);
// An action on a screen of `screen`'s size: every point and the region on
// it, a click count of 1 to 3, a scroll of 1 to 100 steps, text and keys not
// empty and within kMaxDesktopTextBytes, a drag of 2 to kMaxDragPoints.
void check_desktop_action(const DesktopAction& action, const DesktopSize& screen);

}  // namespace mayura
