// mayura-run mcp: the agent tools served to any MCP client on standard input
// and output. The sandbox is made with mayura-run's own options (image,
// network, lifetime, limits, desktop) when the first tool needs it, through
// a daemon or an engine in this process as a run would be, and released when
// the client goes (its input's end) or a stop signal comes.

#include "run_mcp.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/sandbox.hpp"
#include "mcp_replies.hpp"
#include "mcp_server.hpp"
#include "run_args.hpp"
#include "run_create.hpp"
#include "run_engine.hpp"
#include "stop_signals.hpp"

namespace mayura::tools {
namespace {

constexpr const char* kMcpUsage = R"(usage: mayura-run mcp [--tools LIST] [OPTIONS]

Serves the agent tools to an MCP client on standard input and output (the
Model Context Protocol's stdio transport). One sandbox, made with OPTIONS
when the first tool needs it, serves the whole session; it is released when
the client closes the input, or at SIGINT, SIGTERM or SIGHUP.

  --tools LIST   which tools, separated by commas, of: read (read, list,
                 url), exec, write, remove, background (start, commands,
                 output, input, signal, stop, wait) and desktop (screenshot,
                 cursor, click, move, drag, scroll, type, key). Default:
                 read,exec,write,remove,background, and desktop with
                 --desktop.
  --timeout S    the most a command, or a wait for one, may take (default
                 300 s).

OPTIONS are mayura-run's sandbox options: --image, --user, --workdir,
--network, --allow, --lifetime, --cpus, --memory, --disk, --disk-io,
--pids, --writable-root, --from-snapshot, --volume, --seccomp, --port,
--desktop, --local. A tool's failure comes back to the model as an error
result naming its reason.
)";

// What makes sense for one command but not for a session of tools.
void refuse_run_only_options(const Args& args) {
  const auto refuse = [](const char* what) {
    usage_error(std::string("mcp: ") + what + " is for a run, not a session");
  };
  if (!args.command.empty()) refuse("a COMMAND");
  if (args.interactive || args.tty) refuse("-i/-t");
  if (args.json) refuse("--json");
  if (args.stdin_on) refuse("--stdin");
  if (!args.copy_in.empty() || !args.copy_out.empty()) refuse("--copy-in/--copy-out");
  if (!args.screenshot.empty()) refuse("--screenshot");
  if (args.snapshot_to) refuse("--snapshot-to");
  if (!args.env.empty() || !args.cwd.empty()) refuse("--env/--cwd");
}

SandboxToolsOptions tool_options(const std::optional<std::string>& list, const Args& args) {
  SandboxToolsOptions o;
  o.read = false;
  if (args.timeout_ms) o.exec_timeout_ms = *args.timeout_ms;
  o.max_output_bytes = 64 * 1024;
  std::string names =
      list.value_or(args.desktop ? "read,exec,write,remove,background,desktop" : "read,exec,write,remove,background");
  std::stringstream in(names);
  for (std::string name; std::getline(in, name, ',');) {
    if (name == "read") o.read = true;
    else if (name == "exec") o.exec = true;
    else if (name == "write") o.write = true;
    else if (name == "remove") o.remove = true;
    else if (name == "background") o.background = true;
    else if (name == "desktop") o.desktop = true;
    else usage_error("--tools: no tools '" + name + "' (read, exec, write, remove, background, desktop)");
  }
  if (!o.read && !o.exec && !o.write && !o.remove && !o.background && !o.desktop) usage_error("--tools: none named");
  if (o.desktop && !args.desktop) usage_error("--tools desktop needs --desktop (the screen's size)");
  if (args.desktop) o.screen = *args.desktop;
  return o;
}

// What the model is told of its machine.
std::string instructions(const Args& args, const std::string& daemon) {
  std::string text = "A Linux sandbox (image " + (args.image.empty() ? std::string("host") : args.image) +
                     ", network " + std::string(network_kind_name(args.network.kind)) + ") made for this session";
  if (!daemon.empty()) text += " by the mayurad at " + daemon;
  text += ". Run commands with exec; leave servers and watchers running with start and read their output later.";
  if (args.network.kind == NetworkKind::none) text += " The sandbox has no network.";
  return text;
}

bool readable(int fd, int timeout_ms) {
  pollfd p = {fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

// The client's lines, to `server`, until the input ends (true) or either of
// `wake` is written to (a stop signal, or the client gone: false). A line
// over the bound is refused and skipped.
bool serve_lines(int in, std::array<int, 2> wake, McpServer& server) {
  std::string buffer;
  bool skipping = false;  // within a line over the bound
  char chunk[65536];
  for (;;) {
    pollfd fds[3] = {{in, POLLIN, 0}, {wake[0], POLLIN, 0}, {wake[1], POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return true;
    }
    if (fds[1].revents || fds[2].revents) return false;
    const ssize_t n = ::read(in, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t end; (end = buffer.find('\n', start)) != std::string::npos; start = end + 1) {
      if (skipping) {
        skipping = false;
        continue;
      }
      server.receive(std::string_view(buffer).substr(start, end - start));
    }
    buffer.erase(0, start);
    if (buffer.size() > kMcpMaxMessageBytes) {
      if (!skipping) server.refuse_oversized();
      skipping = true;
      buffer.clear();
    }
  }
  // A last message without its newline still counts.
  if (!skipping) server.receive(buffer);
  return true;
}

}  // namespace

int run_mcp_command(int argc, char** argv) {
  std::vector<char*> rest{argv[0]};
  std::optional<std::string> tools_list;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return std::fputs(kMcpUsage, stdout), 0;
    if (arg == "--tools") {
      if (i + 1 == argc) usage_error("--tools takes a list");
      tools_list = argv[++i];
    } else if (arg.rfind("--tools=", 0) == 0) {
      tools_list = arg.substr(8);
    } else {
      rest.push_back(argv[i]);
    }
  }
  rest.push_back(nullptr);
  const Args args = parse_run_args(static_cast<int>(rest.size()) - 1, rest.data(), false);
  refuse_run_only_options(args);
  const SandboxToolsOptions options = tool_options(tools_list, args);

  const StopSignals stop_signals({SIGINT, SIGTERM, SIGHUP});
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return std::perror("mayura-run mcp: eventfd"), kSandboxFailed;
  const SignalWatch on_stop(stop_signals, [fd = wake.get()](int) {
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  });
  // A client that closed its end gets no more replies, and mayura-run goes
  // on to release the sandbox.
  ::signal(SIGPIPE, SIG_IGN);
  try {
    // Before any input is read: the client may hand the whole session over
    // to mayura-run-local.
    const auto engine = choose_engine(args.local);
    std::optional<std::string> profile;
    if (args.seccomp_file) profile = read_host_file(*args.seccomp_file);
    CreateOptions create = create_options(args, std::move(profile));
    Sandboxes sandboxes = run_sandboxes(engine.provider(), engine.daemon, args, create);
    const auto per_run = sandbox_per_run(sandboxes, [create](const RunInfo&) { return create; });
    {
      // Written to when the client is gone (its output closed, or its
      // replies unread past the bound): the session ends as at a signal.
      UniqueFd gone(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!gone) throw SandboxError(Reason::INTERNAL, "eventfd failed");
      McpReplies replies(1, gone.get());
      McpServer server(sandbox_tools(per_run->source(), options), sandboxes, instructions(args, engine.daemon),
                       args.network.kind != NetworkKind::none,
                       [&replies](const std::string& line) { replies.push(line); });
      // A client that closed its input (the protocol's way to end a
      // session) may still read the replies to what it asked: those calls
      // run to their end, and their replies are written, unless a stop
      // signal comes or the client is gone first.
      if (serve_lines(0, {wake.get(), gone.get()}, server)) {
        while (!server.wait_idle(std::chrono::milliseconds(0)) && !readable(wake.get(), 100) &&
               !readable(gone.get(), 0)) {
        }
        server.finish();
        replies.drain(wake.get());
      }
      server.finish();
    }
    per_run->release("mcp");
    return 0;
  } catch (const SandboxError& e) {
    std::fprintf(stderr, "mayura-run mcp: %s: %s\n", std::string(reason_name(e.reason())).c_str(), e.what());
    return kSandboxFailed;
  }
}

}  // namespace mayura::tools
