// The tools an agent leaves a command running with and comes back to (a
// dev server, a watcher, a REPL): start it, list what runs, read its output
// from where it last read, type into it, signal it, stop it with everything
// it started, wait for its end. What a command prints is held by the
// sandbox's handle (Sandbox::start), so a later step of the run reads what
// was printed meanwhile.

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <limits>
#include <utility>

#include "tool_json.hpp"
#include "tool_maker.hpp"

namespace mayura::tool_maker {
namespace {

using nlohmann::json;
using tool_json::Input;

// A background command's own timeout, at most: a day (it ends with the
// sandbox anyway).
constexpr std::int64_t kLongestTimeoutMs = 24LL * 3600 * 1000;
constexpr std::int64_t kMaxOffset = std::numeric_limits<std::int64_t>::max();

constexpr std::array<std::string_view, 5> kStates = {"running", "exited", "timedOut", "stopped", "failed"};

// The signals a model may send, by the names it knows them by.
constexpr std::array<std::pair<std::string_view, int>, 8> kSignals = {{{"INT", SIGINT},
                                                                       {"TERM", SIGTERM},
                                                                       {"KILL", SIGKILL},
                                                                       {"HUP", SIGHUP},
                                                                       {"QUIT", SIGQUIT},
                                                                       {"USR1", SIGUSR1},
                                                                       {"USR2", SIGUSR2},
                                                                       {"CONT", SIGCONT}}};

// A command as the model started it: the line it gave, not the shell
// around it.
std::string command_line(const std::vector<std::string>& argv) {
  if (argv.size() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c") return argv[2];
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
  return line;
}

json info_json(const CommandInfo& c) {
  json j = {{"id", c.id},
            {"command", tool_json::valid_utf8(command_line(c.argv))},
            {"state", std::string(kStates.at(static_cast<std::size_t>(c.state)))},
            {"exitCode", c.exit_code ? json(*c.exit_code) : json(nullptr)},
            {"startedMs", c.started_ms},
            {"endedMs", c.ended_ms ? json(*c.ended_ms) : json(nullptr)},
            {"stdoutBytes", c.stdout_bytes},
            {"stderrBytes", c.stderr_bytes}};
  if (!c.error.empty()) j["error"] = tool_json::valid_utf8(c.error);
  return j;
}

json id_property() { return string_property("the command's id, as start gave it (c1, c2, ...)"); }

Tool start_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make(
      "start", ToolEffect::write,
      "Start a shell command (/bin/sh -c) in the sandbox and leave it running: a server, a watcher, a REPL. Returns "
      "at once with its id. Its output is kept (the newest 1 MiB of each stream) for output to read in a later step; "
      "it runs until it ends, its timeoutMs passes, stop is called, or the sandbox ends.",
      object_schema({{"command", string_property("the command line, run by /bin/sh -c")},
                     {"cwd", string_property("the directory to run in; default: the working directory")},
                     {"env", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
                     {"stdin", string_property("written to its standard input first; the input stays open")},
                     {"timeoutMs", integer_property("stop it after this long; default: never", 1, kLongestTimeoutMs)}},
                    {"command"}),
      [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
        const Input input(in, {"command", "cwd", "env", "stdin", "timeoutMs"});
        const std::string command = input.string("command");
        StartOptions s;
        s.cwd = input.optional_string("cwd").value_or("");
        s.env = input.string_map("env");
        s.stdin = input.optional_string("stdin");
        s.timeout_ms = input.optional_integer("timeoutMs", 1, kLongestTimeoutMs);
        const bool charged = o.exec_cost_micros > 0 && run.budget;
        if (charged && !run.budget->charge(o.exec_cost_micros)) {
          throw SandboxError(Reason::LIMIT_REACHED, "the run's budget is spent");
        }
        try {
          return info_json(sandbox().start({"/bin/sh", "-c", command}, s));
        } catch (const SandboxError& error) {
          // A command refused before it ran costs nothing.
          if (charged && error.reason() != Reason::CANCELLED) run.budget->refund(o.exec_cost_micros);
          throw;
        }
      });
}

Tool commands_tool(const ToolMaker& maker) {
  return maker.make("commands", ToolEffect::read,
                    "List the commands started in the sandbox with start: id, command, state (running, exited, "
                    "timedOut, stopped, failed), exit code and how much each has printed.",
                    object_schema(json::object(), {}),
                    [](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {});
                      json list = json::array();
                      for (const CommandInfo& c : sandbox().commands()) list.push_back(info_json(c));
                      return json{{"commands", std::move(list)}};
                    });
}

Tool output_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  const auto max = static_cast<std::int64_t>(o.max_output_bytes);
  return maker.make(
      "output", ToolEffect::read,
      "Read what a started command printed on stdout or stderr. Without from: its last " + std::to_string(max) +
          " bytes. With from (the next of an earlier read): what came since. dropped counts bytes no longer kept.",
      object_schema({{"id", id_property()},
                     {"stream", {{"type", "string"}, {"enum", {"stdout", "stderr"}}}},
                     {"from", integer_property("the offset to read from: an earlier read's next", 0, kMaxOffset)},
                     {"maxBytes", integer_property("the most to return", 1, max)}},
                    {"id"}),
      [max](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
        const Input input(in, {"id", "stream", "from", "maxBytes"});
        const std::string id = input.string("id");
        const std::string name = input.optional_string("stream").value_or("stdout");
        if (name != "stdout" && name != "stderr")
          throw SandboxError(Reason::INVALID_INPUT, "'stream' is stdout or stderr");
        const auto stream = name == "stdout" ? OutputStream::out : OutputStream::err;
        const auto limit = static_cast<std::size_t>(input.optional_integer("maxBytes", 1, max).value_or(max));
        const auto from = input.optional_integer("from", 0, kMaxOffset);
        const Sandbox s = sandbox();
        CommandInfo info = s.command(id);
        std::uint64_t start = 0;
        if (from) {
          start = static_cast<std::uint64_t>(*from);
        } else {
          const std::uint64_t printed = stream == OutputStream::out ? info.stdout_bytes : info.stderr_bytes;
          start = printed > limit ? printed - limit : 0;
        }
        const OutputSlice slice = s.output(id, stream, start, limit);
        // What it printed after the slice was cut is the next read's; the
        // state is read again so that an end seen here means all was read.
        info = s.command(id);
        return json{{"id", id},
                    {"stream", name},
                    {"offset", slice.offset},
                    {"dropped", slice.dropped},
                    {"data", tool_json::valid_utf8(slice.data)},
                    {"next", slice.next},
                    {"state", std::string(kStates.at(static_cast<std::size_t>(info.state)))},
                    {"exitCode", info.exit_code ? json(*info.exit_code) : json(nullptr)}};
      });
}

Tool input_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make("input", ToolEffect::write,
                    "Write to a started command's standard input (at most " + std::to_string(o.max_write_bytes) +
                        " bytes a call), and/or close it (close: true) so that the command reads its end.",
                    object_schema({{"id", id_property()},
                                   {"data", string_property("what to write; add \\n to end a line")},
                                   {"close", {{"type", "boolean"}, {"description", "close the input after writing"}}}},
                                  {"id"}),
                    [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {"id", "data", "close"});
                      const std::string id = input.string("id");
                      std::string data = input.optional_string("data").value_or("");
                      bool close = false;
                      if (in.contains("close")) {
                        if (!in["close"].is_boolean())
                          throw SandboxError(Reason::INVALID_INPUT, "'close' must be true or false");
                        close = in["close"].get<bool>();
                      }
                      if (data.empty() && !close)
                        throw SandboxError(Reason::INVALID_INPUT, "give 'data', 'close' or both");
                      if (data.size() > o.max_write_bytes) {
                        throw SandboxError(Reason::LIMIT_REACHED,
                                           "the data is over " + std::to_string(o.max_write_bytes) + " bytes");
                      }
                      const std::size_t bytes = data.size();
                      const Sandbox s = sandbox();
                      if (!data.empty()) s.write_input(id, std::move(data));
                      if (close) s.close_input(id);
                      return json{{"id", id}, {"bytes", bytes}, {"closed", close}};
                    });
}

Tool signal_tool(const ToolMaker& maker) {
  json names = json::array();
  for (const auto& [name, number] : kSignals) names.push_back(std::string(name));
  return maker.make(
      "signal", ToolEffect::write,
      "Send a signal to a started command (INT is Ctrl-C). To end it with everything it started, "
      "use stop.",
      object_schema({{"id", id_property()}, {"signal", {{"type", "string"}, {"enum", names}}}}, {"id", "signal"}),
      [](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
        const Input input(in, {"id", "signal"});
        const std::string id = input.string("id");
        const std::string name = input.string("signal");
        const auto* it = std::find_if(kSignals.begin(), kSignals.end(), [&](const auto& s) { return s.first == name; });
        if (it == kSignals.end()) {
          throw SandboxError(Reason::INVALID_INPUT, "'signal' is one of INT, TERM, KILL, HUP, QUIT, USR1, USR2, CONT");
        }
        sandbox().signal(id, it->second);
        return json{{"id", id}, {"signal", name}};
      });
}

Tool stop_tool(const ToolMaker& maker) {
  return maker.make("stop", ToolEffect::write,
                    "Stop a started command and every process it started, at once. Returns its final state.",
                    object_schema({{"id", id_property()}}, {"id"}),
                    [](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {"id"});
                      return info_json(sandbox().stop(input.string("id")));
                    });
}

Tool wait_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make(
      "wait", ToolEffect::read,
      "Wait for a started command to end, at most timeoutMs (default and at most " + std::to_string(o.exec_timeout_ms) +
          "). Returns its state: still running if the wait ran out.",
      object_schema({{"id", id_property()}, {"timeoutMs", integer_property("the most to wait", 0, o.exec_timeout_ms)}},
                    {"id"}),
      [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
        const Input input(in, {"id", "timeoutMs"});
        const std::string id = input.string("id");
        const std::int64_t timeout =
            input.optional_integer("timeoutMs", 0, o.exec_timeout_ms).value_or(o.exec_timeout_ms);
        const Sandbox s = sandbox();
        // In short waits, so that the run's cancellation ends the wait (and
        // never the command) within a quarter of a second.
        constexpr std::int64_t kSliceMs = 250;
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
        for (;;) {
          const auto left =
              std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
          CommandInfo info = left > 0 ? s.wait(id, std::min(left, kSliceMs)) : s.command(id);
          if (info.state != CommandState::running || left <= kSliceMs) return info_json(info);
          if (run.cancellation.stop_requested()) throw SandboxError(Reason::CANCELLED, "the run was cancelled");
        }
      });
}

}  // namespace

std::vector<Tool> background_tools(const ToolMaker& maker, const SandboxToolsOptions& options) {
  std::vector<Tool> tools;
  tools.push_back(start_tool(maker, options));
  tools.push_back(commands_tool(maker));
  tools.push_back(output_tool(maker, options));
  tools.push_back(input_tool(maker, options));
  tools.push_back(signal_tool(maker));
  tools.push_back(stop_tool(maker));
  tools.push_back(wait_tool(maker, options));
  return tools;
}

}  // namespace mayura::tool_maker
