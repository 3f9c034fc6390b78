#pragma once
// How each tool is made (tools.cpp, desktop_tools.cpp): its definition, and
// a call that checks the run's permissions before anything else.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mayura/tools.hpp"

namespace mayura::tool_maker {

inline nlohmann::json string_property(const std::string& description) {
  return {{"type", "string"}, {"description", description}};
}

inline nlohmann::json integer_property(const std::string& description, std::int64_t min, std::int64_t max) {
  return {{"type", "integer"}, {"description", description}, {"minimum", min}, {"maximum", max}};
}

inline nlohmann::json object_schema(nlohmann::json properties, std::vector<std::string> required) {
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

class ToolMaker {
 public:
  ToolMaker(SandboxSource source, const SandboxToolsOptions& options) : source_(std::move(source)), options_(options) {}

  // The sandbox, reached only when asked for: an act checks its input (and
  // the budget) first, so a refused call creates no per-run sandbox.
  using SandboxOf = std::function<Sandbox()>;
  using Act = std::function<nlohmann::json(const SandboxOf&, const nlohmann::json&, const RunContext&)>;

  Tool make(const std::string& verb, ToolEffect effect, std::string description, nlohmann::json schema, Act act) const {
    Tool tool;
    ToolDefinition& d = tool.definition;
    d.name = options_.name + "_" + verb;
    d.id = options_.name + "." + verb;
    d.description = std::move(description);
    d.input_schema = std::move(schema);
    d.effect = effect;
    d.permissions = {"tool:" + d.id, "sandbox:" + options_.name + ":" + verb,
                     "effect:" + std::string(tool_effect_name(effect))};
    tool.call = [source = source_, permissions = d.permissions, id = d.id, act = std::move(act)](
                    const nlohmann::json& input, const RunContext& run) {
      for (const auto& p : permissions) {
        if (!run.permissions.count(p)) throw SandboxError(Reason::PERMISSION_DENIED, id + " needs the permission " + p);
      }
      if (run.cancellation.stop_requested()) throw SandboxError(Reason::CANCELLED, "the run was cancelled");
      return act([&] { return source(run); }, input, run);
    };
    return tool;
  }

 private:
  SandboxSource source_;
  SandboxToolsOptions options_;
};

// The desktop's tools (desktop_tools.cpp), for a screen of options.screen.
std::vector<Tool> desktop_tools(const ToolMaker& maker, const SandboxToolsOptions& options);
// The background commands' tools (background_tools.cpp): start, commands,
// output, input, signal, stop and wait.
std::vector<Tool> background_tools(const ToolMaker& maker, const SandboxToolsOptions& options);

}  // namespace mayura::tool_maker
