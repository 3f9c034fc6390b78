#include "mayura/validate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "mayura/errors.hpp"
#include "mayura/resource_limits.hpp"

namespace mayura {
namespace {

// Caller text quoted in a message: printable ASCII only and bounded, so a
// message is always valid text (a host may put it into JSON as is).
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return out;
}

[[noreturn]] void invalid(const std::string& message) { throw SandboxError(Reason::INVALID_INPUT, message); }

bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

}  // namespace

void check_path(std::string_view path, std::string_view what) {
  const std::string name(what);
  if (path.empty()) invalid(name + " is empty");
  if (has_nul(path)) invalid(name + " contains a NUL byte");
  if (path.size() > kMaxPathBytes) invalid(name + " is longer than 4096 bytes");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end - start > 255) invalid(name + " has a component longer than 255 bytes");
    start = end + 1;
  }
}

void check_env(const std::map<std::string, std::string>& env) {
  if (env.size() > kMaxEnvEntries) invalid("env has more than 1024 variables");
  std::size_t total = 0;
  for (const auto& [key, value] : env) {
    if (key.empty()) invalid("env has an empty variable name");
    const bool leading_ok = std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_';
    const bool rest_ok = std::all_of(key.begin(), key.end(),
                                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!leading_ok || !rest_ok) invalid("env variable name '" + printable(key) + "' is not a valid name");
    if (has_nul(value)) invalid("env variable " + key + " has a NUL byte in its value");
    total += key.size() + value.size() + 2;
  }
  if (total > kMaxCommandBytes) invalid("env is larger than 128 KiB");
}

void check_terminal_size(const TerminalSize& size) {
  if (size.rows < 1 || size.rows > 1000 || size.columns < 1 || size.columns > 1000) {
    invalid("a terminal's rows and columns must each be 1 to 1000, not " + std::to_string(size.rows) + "x" +
            std::to_string(size.columns));
  }
}

void check_signal(int signal) {
  if (signal < 1 || signal > 64) invalid("a signal is 1 to 64, not " + std::to_string(signal));
}

void check_argv(const std::vector<std::string>& argv) {
  if (argv.empty()) invalid("command is empty");
  if (argv[0].empty()) invalid("command name is empty");
  std::size_t total = 0;
  for (const auto& arg : argv) {
    if (has_nul(arg)) invalid("command argument contains a NUL byte");
    total += arg.size() + 1;
  }
  if (total > kMaxCommandBytes) invalid("command is larger than 128 KiB");
}

void check_port(int port) {
  if (port < 1 || port > 65535) invalid("port " + std::to_string(port) + " is not between 1 and 65535");
}

std::string normalize_domain(std::string_view name) {
  std::string n(name);
  if (!n.empty() && n.back() == '.') n.pop_back();
  if (n.empty() || n.size() > 253) return {};
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto label_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  std::string_view last;
  std::size_t start = 0;
  while (start <= n.size()) {
    std::size_t end = n.find('.', start);
    if (end == std::string::npos) end = n.size();
    const std::string_view label(n.data() + start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), label_char)) {
      return {};
    }
    last = label;
    start = end + 1;
  }
  // No top-level domain is numeric: 10.0.0.1 (or 2130706433) is an address.
  if (std::all_of(last.begin(), last.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return {};
  return n;
}

DomainPattern parse_domain_pattern(std::string_view pattern) {
  const std::string quoted = "allowed domain '" + printable(pattern) + "'";
  if (pattern.empty()) invalid("allowed domain is empty");
  if (has_nul(pattern) || pattern.size() > 260) invalid("allowed domain is malformed");
  DomainPattern out;
  std::string_view p = pattern;
  // name:port limits the port
  if (const auto colon = p.rfind(':'); colon != std::string_view::npos) {
    const std::string_view port = p.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) {
      invalid(quoted + " has a bad port");
    }
    const int number = std::stoi(std::string(port));
    check_port(number);
    out.port = static_cast<std::uint16_t>(number);
    p = p.substr(0, colon);
  }
  if (p.substr(0, 2) == "*.") {
    out.subdomains = true;
    p = p.substr(2);
  }
  out.domain = normalize_domain(p);
  if (out.domain.empty()) invalid(quoted + " is not a domain name (a malformed name, or an address)");
  // `*.com` would allow a whole top-level domain; `*` is no domain name at all.
  if (out.subdomains && out.domain.find('.') == std::string::npos) {
    invalid(quoted + " would allow a whole top-level domain");
  }
  return out;
}

void check_domain_pattern(std::string_view pattern) { parse_domain_pattern(pattern); }

void check_labels(const std::map<std::string, std::string>& labels) {
  if (labels.size() > 64) invalid("more than 64 labels");
  for (const auto& [key, value] : labels) {
    if (key.empty() || key.size() > kMaxLabelBytes || has_nul(key))
      invalid("label name is empty, too long or has a NUL byte");
    if (value.size() > kMaxLabelBytes || has_nul(value)) invalid("label " + key + " is too long or has a NUL byte");
  }
}

namespace {
void check_stored_name(std::string_view name, const char* what) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  const bool fits =
      !name.empty() && name.size() <= 64 && alnum(name.front()) &&
      std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
  if (!fits) {
    invalid("\"" + std::string(name.substr(0, 80)) + "\" is not a " + what +
            "'s name: 1 to 64 of A-Z a-z 0-9 . _ -, a letter or digit first");
  }
}
}  // namespace

void check_snapshot_name(std::string_view name) { check_stored_name(name, "snapshot"); }
void check_volume_name(std::string_view name) { check_stored_name(name, "volume"); }

void check_resources(const std::optional<double>& cpus, const std::optional<std::int64_t>& memory_mib,
                     const std::optional<std::int64_t>& pids) {
  if (cpus && !(std::isfinite(*cpus) && *cpus > 0 && *cpus <= kMaxCpus)) {
    throw SandboxError(Reason::INVALID_INPUT, "cpus must be above 0 and at most 1024");
  }
  if (memory_mib && (*memory_mib < kMinMemoryMib || *memory_mib > kMaxMemoryMib)) {
    throw SandboxError(Reason::INVALID_INPUT, "memory_mib must be from 16 to 2^30");
  }
  if (pids && (*pids < 1 || *pids > kMaxPids)) {
    throw SandboxError(Reason::INVALID_INPUT, "pids must be from 1 to 2^22");
  }
}

void check_desktop_size(const DesktopSize& size) {
  if (size.width < kMinDesktopSide || size.height < kMinDesktopSide || size.width > kMaxDesktopWidth ||
      size.height > kMaxDesktopHeight) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "a desktop is " + std::to_string(kMinDesktopSide) + "x" + std::to_string(kMinDesktopSide) +
                           " to " + std::to_string(kMaxDesktopWidth) + "x" + std::to_string(kMaxDesktopHeight) +
                           ", not " + std::to_string(size.width) + "x" + std::to_string(size.height));
  }
}

namespace {

void check_point(const Point& p, const DesktopSize& screen) {
  if (p.x < 0 || p.y < 0 || p.x >= screen.width || p.y >= screen.height) {
    throw SandboxError(Reason::INVALID_INPUT, "(" + std::to_string(p.x) + ", " + std::to_string(p.y) +
                                                  ") is outside the screen (" + std::to_string(screen.width) + "x" +
                                                  std::to_string(screen.height) + ")");
  }
}

}  // namespace

void check_desktop_action(const DesktopAction& action, const DesktopSize& screen) {
  using Kind = DesktopAction::Kind;
  const auto one_point = [&] {
    if (action.points.size() != 1) throw SandboxError(Reason::INVALID_INPUT, "the action takes one point");
    check_point(action.points[0], screen);
  };
  switch (action.kind) {
    case Kind::screenshot:
      if (action.region) {
        const Region& r = *action.region;
        // in 64 bits: a caller's sums must not overflow
        if (r.x < 0 || r.y < 0 || r.width <= 0 || r.height <= 0 || std::int64_t{r.x} + r.width > screen.width ||
            std::int64_t{r.y} + r.height > screen.height) {
          throw SandboxError(Reason::INVALID_INPUT, "the region is not on the screen (" + std::to_string(screen.width) +
                                                        "x" + std::to_string(screen.height) + ")");
        }
      }
      return;
    case Kind::cursor: return;
    case Kind::move: return one_point();
    case Kind::click:
      one_point();
      if (action.count < 1 || action.count > 3) throw SandboxError(Reason::INVALID_INPUT, "a click count is 1 to 3");
      if (action.button != MouseButton::left && action.button != MouseButton::middle &&
          action.button != MouseButton::right) {
        throw SandboxError(Reason::INVALID_INPUT, "no such mouse button");
      }
      return;
    case Kind::drag:
      if (action.points.size() < 2 || action.points.size() > kMaxDragPoints) {
        throw SandboxError(Reason::INVALID_INPUT,
                           "a drag goes through 2 to " + std::to_string(kMaxDragPoints) + " points");
      }
      for (const Point& p : action.points) check_point(p, screen);
      return;
    case Kind::scroll:
      one_point();
      if (action.amount < 1 || action.amount > 100)
        throw SandboxError(Reason::INVALID_INPUT, "a scroll is 1 to 100 steps");
      if (action.direction != ScrollDirection::up && action.direction != ScrollDirection::down &&
          action.direction != ScrollDirection::left && action.direction != ScrollDirection::right) {
        throw SandboxError(Reason::INVALID_INPUT, "no such scroll direction");
      }
      return;
    case Kind::type:
    case Kind::key:
      if (action.text.empty()) {
        throw SandboxError(Reason::INVALID_INPUT, action.kind == Kind::type ? "no text to type" : "no key to press");
      }
      if (action.text.size() > kMaxDesktopTextBytes) {
        throw SandboxError(Reason::INVALID_INPUT,
                           "more than " + std::to_string(kMaxDesktopTextBytes) + " bytes to type or press at once");
      }
      return;
  }
  throw SandboxError(Reason::INVALID_INPUT, "no such desktop action");
}

}  // namespace mayura
