#include "desktop.hpp"

#include <cstdio>

#include "exec.hpp"
#include "mayura/errors.hpp"
#include "keys.hpp"
#include "program_memfd.hpp"

extern "C" const char mayura_desktop_helper_blob[];
extern "C" const char mayura_desktop_helper_blob_end[];

namespace mayura::native {
namespace {

// The helper's exit codes (desktop/helper/display.hpp).
constexpr int kHelperBadInput = 2;
constexpr int kHelperNoDisplay = 3;
constexpr int kHelperNoServer = 4;

// An action waits this long for the X server: one that a command holds
// grabbed answers nobody until it lets go.
constexpr std::int64_t kActionTimeoutMs = 10'000;
// Xvfb's start, with its keymap compiled (xkbcomp), on a loaded host.
constexpr std::int64_t kStartTimeoutMs = 30'000;
// A 3840x2160 screen is 24 MiB as RGB; a PNG of it is rarely larger.
constexpr std::size_t kMaxAnswerBytes = std::size_t{48} << 20;

std::string hex(std::uint32_t keysym) {
  char text[16];
  std::snprintf(text, sizeof text, "%x", keysym);
  return text;
}

int wheel_button(ScrollDirection direction) {
  switch (direction) {
    case ScrollDirection::up: return 4;
    case ScrollDirection::down: return 5;
    case ScrollDirection::left: return 6;
    case ScrollDirection::right: return 7;
  }
  return 5;
}

void add_point(std::vector<std::string>& args, const Point& p) {
  args.push_back(std::to_string(p.x));
  args.push_back(std::to_string(p.y));
}

ExecResult run_helper(const std::shared_ptr<SandboxCore>& core, std::string cgroup_name, std::vector<std::string> args,
                      std::int64_t timeout_ms, const std::stop_token& cancellation) {
  args.insert(args.begin(), "mayura-desktop");
  ExecOptions options;
  options.timeout_ms = timeout_ms;
  options.max_output_bytes = kMaxAnswerBytes;
  options.cancellation = cancellation;
  return run_command(core, std::move(cgroup_name), core->workdir, std::move(args), std::move(options),
                     core->desktop_helper);
}

}  // namespace

UniqueFd make_desktop_helper_memfd() {
  return program_memfd("mayura-desktop", mayura_desktop_helper_blob, mayura_desktop_helper_blob_end);
}

void start_desktop(const std::shared_ptr<SandboxCore>& core, const DesktopSize& size,
                   const std::stop_token& cancellation) {
  // Its own command cgroup, which the X server keeps once the helper has
  // left it running.
  const ExecResult r = run_helper(core, "desktop", {"start", std::to_string(size.width), std::to_string(size.height)},
                                  kStartTimeoutMs, cancellation);
  if (r.timed_out) {
    throw SandboxError(Reason::INTERNAL,
                       "the desktop's X server did not start within " + std::to_string(kStartTimeoutMs / 1000) + " s");
  }
  if (r.exit_code == kHelperNoServer) {
    throw SandboxError(Reason::INVALID_CONFIG, "the image has no X server for a desktop (Xvfb)");
  }
  if (r.exit_code != 0) {
    throw SandboxError(Reason::INTERNAL, "the desktop's X server did not start (the helper ended with " +
                                             std::to_string(r.exit_code.value_or(-1)) + ")");
  }
}

std::vector<std::string> desktop_helper_args(const DesktopAction& action) {
  using Kind = DesktopAction::Kind;
  std::vector<std::string> args;
  switch (action.kind) {
    case Kind::screenshot:
      args = {"screenshot"};
      if (action.region) {
        add_point(args, {action.region->x, action.region->y});
        add_point(args, {action.region->width, action.region->height});
      }
      break;
    case Kind::cursor: args = {"cursor"}; break;
    case Kind::move:
      args = {"move"};
      add_point(args, action.points.at(0));
      break;
    case Kind::click:
      args = {"click"};
      add_point(args, action.points.at(0));
      args.push_back(std::to_string(static_cast<int>(action.button)));
      args.push_back(std::to_string(action.count));
      break;
    case Kind::drag:
      args = {"drag"};
      for (const Point& p : action.points) add_point(args, p);
      break;
    case Kind::scroll:
      args = {"scroll"};
      add_point(args, action.points.at(0));
      args.push_back(std::to_string(wheel_button(action.direction)));
      args.push_back(std::to_string(action.amount));
      break;
    case Kind::type:
      args = {"type"};
      for (const std::uint32_t k : desktop::text_keysyms(action.text)) args.push_back(hex(k));
      break;
    case Kind::key:
      args = {"key"};
      for (const auto& combo : desktop::combo_keysyms(action.text)) {
        std::string keys;
        for (const std::uint32_t k : combo) keys += (keys.empty() ? "" : ",") + hex(k);
        args.push_back(keys);
      }
      break;
  }
  return args;
}

std::string run_desktop_action(const std::shared_ptr<SandboxCore>& core, std::string cgroup_name,
                               const DesktopAction& action, const std::stop_token& cancellation) {
  if (core->desktop_helper < 0) throw SandboxError(Reason::INVALID_INPUT, "the sandbox has no desktop");
  ExecResult r = run_helper(core, std::move(cgroup_name), desktop_helper_args(action), kActionTimeoutMs, cancellation);
  // The helper runs as the sandbox's own: its words are not passed on.
  if (r.timed_out) {
    throw SandboxError(Reason::INTERNAL, "the desktop did not answer within " +
                                             std::to_string(kActionTimeoutMs / 1000) +
                                             " s (a program may hold the X server grabbed)");
  }
  if (r.truncated) {
    throw SandboxError(Reason::INTERNAL,
                       "the desktop's answer was larger than " + std::to_string(kMaxAnswerBytes >> 20) + " MiB");
  }
  switch (r.exit_code.value_or(-1)) {
    case 0: return std::move(r.stdout);
    case kHelperBadInput: throw SandboxError(Reason::INVALID_INPUT, "the desktop refused the action");
    case kHelperNoDisplay:
      throw SandboxError(Reason::INTERNAL, "the sandbox's X server is not running (a command may have ended it)");
    default:
      throw SandboxError(Reason::INTERNAL,
                         "the desktop action failed (the helper ended with " + std::to_string(*r.exit_code) + ")");
  }
}

}  // namespace mayura::native
