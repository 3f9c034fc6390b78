// The tools an agent works in a sandbox with: each checks the run's
// permissions first (so a refused call reaches no sandbox), then its input,
// then acts through the Sandbox handle and its limits.

#include "mayura/tools.hpp"

#include <algorithm>
#include <cctype>

#include "mayura/validate.hpp"
#include "tool_json.hpp"
#include "tool_maker.hpp"

namespace mayura {
namespace {

using nlohmann::json;
using tool_json::Input;
using tool_maker::object_schema;
using tool_maker::string_property;
using tool_maker::ToolMaker;

std::string file_type_name(FileType t) {
  switch (t) {
    case FileType::file: return "file";
    case FileType::directory: return "directory";
    case FileType::symlink: return "symlink";
    case FileType::other: return "other";
  }
  return "other";
}

void check_options(const SandboxToolsOptions& o) {
  const auto bad = [](const std::string& m) { throw SandboxError(Reason::INVALID_INPUT, m); };
  if (o.name.empty() || o.name.size() > 48 || !std::all_of(o.name.begin(), o.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
      })) {
    bad("a tools' name is 1 to 48 letters, digits, _ or -");
  }
  if (o.exec_timeout_ms <= 0) bad("exec_timeout_ms must be positive");
  if (o.exec_cost_micros < 0) bad("exec_cost_micros must not be negative");
  if (o.max_output_bytes < 256) bad("max_output_bytes must be at least 256");
  if (o.max_read_bytes == 0 || o.max_write_bytes == 0) bad("max_read_bytes and max_write_bytes must be positive");
  if (o.desktop) check_desktop_size(o.screen);
}

Tool read_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make(
      "read", ToolEffect::read,
      "Read a file in the sandbox. Paths are relative to the working directory, or absolute. Text comes back as is; "
      "other bytes as base64 (encoding: base64). Files over " +
          std::to_string(o.max_read_bytes) + " bytes are refused.",
      object_schema({{"path", string_property("the file's path")}}, {"path"}),
      [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
        const Input input(in, {"path"});
        const std::string path = input.string("path");
        ReadOptions r;
        r.max_bytes = o.max_read_bytes;
        r.cancellation = run.cancellation;
        const std::string data = sandbox().read_file(path, r);
        json out = {{"path", tool_json::valid_utf8(path)}, {"bytes", data.size()}};
        if (tool_json::is_valid_utf8(data)) {
          out["content"] = data;
          out["encoding"] = "utf8";
        } else {
          out["content"] = tool_json::base64(data);
          out["encoding"] = "base64";
        }
        return out;
      });
}

// One listing entry for the model. A name that is no UTF-8 comes as text
// with U+FFFD for the bytes that are not, and exactly, as base64.
json list_entry(const FileEntry& e) {
  json entry = {{"name", tool_json::valid_utf8(e.name)},
                {"type", file_type_name(e.type)},
                {"size", e.size},
                {"mode", e.mode},
                {"mtimeMs", e.mtime_ms}};
  if (!tool_json::is_valid_utf8(e.name)) entry["nameBase64"] = tool_json::base64(e.name);
  return entry;
}

// A directory of a million entries is a listing no model can read: the
// entries stop once their JSON would pass max_output_bytes, and the answer
// says so and how many there are.
Tool list_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make("list", ToolEffect::read,
                    "List a directory in the sandbox (default: the working directory). A long listing stops after " +
                        std::to_string(o.max_output_bytes) + " bytes (truncated: true, total: the number of entries).",
                    object_schema({{"path", string_property("the directory's path; default '.'")}}, {}),
                    [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
                      const Input input(in, {"path"});
                      const std::string path = input.optional_string("path").value_or(".");
                      FileOptions f;
                      f.cancellation = run.cancellation;
                      const std::vector<FileEntry> listing = sandbox().list(path, f);
                      json entries = json::array();
                      std::size_t bytes = 1;  // "[]" and a comma after all but the last
                      bool truncated = false;
                      for (const FileEntry& e : listing) {
                        json entry = list_entry(e);
                        bytes += entry.dump().size() + 1;
                        if (bytes > o.max_output_bytes) {
                          truncated = true;
                          break;
                        }
                        entries.push_back(std::move(entry));
                      }
                      json out = {{"path", tool_json::valid_utf8(path)}, {"entries", std::move(entries)}};
                      if (truncated) {
                        out["truncated"] = true;
                        out["total"] = listing.size();
                      }
                      return out;
                    });
}

Tool url_tool(const ToolMaker& maker) {
  return maker.make("url", ToolEffect::read, "The URL at which a port published by the sandbox is reached.",
                    object_schema({{"port", {{"type", "integer"}, {"minimum", 1}, {"maximum", 65535}}}}, {"port"}),
                    [](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {"port"});
                      const auto port = input.optional_integer("port", 1, 65535);
                      if (!port) throw SandboxError(Reason::INVALID_INPUT, "'port' is required");
                      return json{{"port", *port}, {"url", sandbox().url(static_cast<int>(*port))}};
                    });
}

Tool exec_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make(
      "exec", ToolEffect::write,
      "Run a shell command (/bin/sh -c) in the sandbox and get its exit code, stdout and stderr. Each stream is cut "
      "to " +
          std::to_string(o.max_output_bytes) + " bytes (the middle left out). Commands stop after timeoutMs (at most " +
          std::to_string(o.exec_timeout_ms) + ").",
      object_schema({{"command", string_property("the command line, run by /bin/sh -c")},
                     {"cwd", string_property("the directory to run in; default: the working directory")},
                     {"env", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
                     {"stdin", string_property("what the command reads on its standard input")},
                     {"timeoutMs", {{"type", "integer"}, {"minimum", 1}, {"maximum", o.exec_timeout_ms}}}},
                    {"command"}),
      [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
        const Input input(in, {"command", "cwd", "env", "stdin", "timeoutMs"});
        const std::string command = input.string("command");
        ExecOptions e;
        e.cwd = input.optional_string("cwd").value_or("");
        e.env = input.string_map("env");
        e.stdin = input.optional_string("stdin");
        e.timeout_ms = input.optional_integer("timeoutMs", 1, o.exec_timeout_ms).value_or(o.exec_timeout_ms);
        e.cancellation = run.cancellation;
        const bool charged = o.exec_cost_micros > 0 && run.budget;
        if (charged && !run.budget->charge(o.exec_cost_micros)) {
          throw SandboxError(Reason::LIMIT_REACHED, "the run's budget is spent");
        }
        ExecResult r;
        try {
          r = sandbox().exec({"/bin/sh", "-c", command}, e);
        } catch (const SandboxError& error) {
          // A command refused before it ran costs nothing.
          if (charged && (error.reason() == Reason::INVALID_INPUT || error.reason() == Reason::GONE)) {
            run.budget->refund(o.exec_cost_micros);
          }
          throw;
        }
        const std::string out = tool_json::valid_utf8(tool_json::clip_middle(r.stdout, o.max_output_bytes));
        const std::string err = tool_json::valid_utf8(tool_json::clip_middle(r.stderr, o.max_output_bytes));
        return json{
            {"exitCode", r.exit_code ? json(*r.exit_code) : json(nullptr)},
            {"stdout", out},
            {"stderr", err},
            {"truncated", r.truncated || r.stdout.size() > o.max_output_bytes || r.stderr.size() > o.max_output_bytes},
            {"timedOut", r.timed_out},
            {"durationMs", r.duration_ms}};
      });
}

Tool write_tool(const ToolMaker& maker, const SandboxToolsOptions& o) {
  return maker.make(
      "write", ToolEffect::write,
      "Write a file in the sandbox, replacing it (parent directories are made). content is text, or base64 with "
      "encoding: base64. At most " +
          std::to_string(o.max_write_bytes) + " bytes.",
      object_schema({{"path", string_property("the file's path")},
                     {"content", string_property("what the file holds")},
                     {"encoding", {{"type", "string"}, {"enum", {"utf8", "base64"}}}}},
                    {"path", "content"}),
      [o](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
        const Input input(in, {"path", "content", "encoding"});
        const std::string path = input.string("path");
        const std::string encoding = input.optional_string("encoding").value_or("utf8");
        if (encoding != "utf8" && encoding != "base64")
          throw SandboxError(Reason::INVALID_INPUT, "'encoding' is utf8 or base64");
        const std::string content = input.string("content");
        const std::string data = encoding == "base64" ? tool_json::unbase64(content) : content;
        if (data.size() > o.max_write_bytes) {
          throw SandboxError(Reason::LIMIT_REACHED,
                             "the content is over " + std::to_string(o.max_write_bytes) + " bytes");
        }
        FileOptions f;
        f.cancellation = run.cancellation;
        sandbox().write_file(path, data, f);
        return json{{"path", tool_json::valid_utf8(path)}, {"bytes", data.size()}};
      });
}

Tool remove_tool(const ToolMaker& maker) {
  return maker.make("remove", ToolEffect::write, "Remove a file or a directory (with what it holds) in the sandbox.",
                    object_schema({{"path", string_property("the path to remove")}}, {"path"}),
                    [](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
                      const Input input(in, {"path"});
                      const std::string path = input.string("path");
                      FileOptions f;
                      f.cancellation = run.cancellation;
                      sandbox().remove(path, f);
                      return json{{"path", tool_json::valid_utf8(path)}, {"removed", true}};
                    });
}

}  // namespace

std::string_view tool_effect_name(ToolEffect effect) noexcept { return effect == ToolEffect::read ? "read" : "write"; }

bool RunBudget::charge(std::int64_t micros) {
  std::lock_guard lock(mutex_);
  if (micros > remaining_) return false;
  remaining_ -= micros;
  return true;
}

void RunBudget::refund(std::int64_t micros) {
  std::lock_guard lock(mutex_);
  remaining_ += micros;
}

std::int64_t RunBudget::remaining() const {
  std::lock_guard lock(mutex_);
  return remaining_;
}

std::vector<Tool> sandbox_tools(SandboxSource source, const SandboxToolsOptions& options) {
  check_options(options);
  if (!source) throw SandboxError(Reason::INVALID_INPUT, "sandbox_tools needs a sandbox source");
  const ToolMaker maker(std::move(source), options);
  std::vector<Tool> tools;
  if (options.read) {
    tools.push_back(read_tool(maker, options));
    tools.push_back(list_tool(maker, options));
    tools.push_back(url_tool(maker));
  }
  if (options.exec) tools.push_back(exec_tool(maker, options));
  if (options.write) tools.push_back(write_tool(maker, options));
  if (options.remove) tools.push_back(remove_tool(maker));
  if (options.background) {
    for (Tool& t : tool_maker::background_tools(maker, options)) tools.push_back(std::move(t));
  }
  if (options.desktop) {
    for (Tool& t : tool_maker::desktop_tools(maker, options)) tools.push_back(std::move(t));
  }
  return tools;
}

std::vector<Tool> sandbox_tools(const Sandbox& sandbox, const SandboxToolsOptions& options) {
  SandboxToolsOptions o = options;
  if (o.desktop) {
    const auto screen = sandbox.desktop_size();
    if (!screen) throw SandboxError(Reason::INVALID_INPUT, "the desktop tools need a sandbox created with a desktop");
    o.screen = *screen;
  }
  return sandbox_tools([sandbox](const RunContext&) { return sandbox; }, o);
}

}  // namespace mayura
