// The README's agent example, built and run as a test so it cannot rot: a
// host gives each run a sandbox of its own and hands the sandbox's tools to
// a model; here a scripted "model" stands in for the API call.
#include <iostream>
#include <map>
#include <mayura/native.hpp>
#include <mayura/sandbox.hpp>
#include <nlohmann/json.hpp>

using nlohmann::json;

// What a model API would answer: the tool calls it wants, one turn each.
std::vector<json> model_turns() {
  return {{{"name", "workspace_write"}, {"input", {{"path", "main.py"}, {"content", "print(6 * 7)"}}}},
          {{"name", "workspace_exec"}, {"input", {{"command", "python3 main.py"}}}}};
}

int main() {
  auto sandboxes =
      mayura::create_sandboxes(mayura::native_sandboxes(), {.max_sandboxes = 8, .max_lifetime_ms = 60 * 60'000});
  auto per_run = mayura::sandbox_per_run(sandboxes, [](const mayura::RunInfo& run) {
    return mayura::CreateOptions{.lifetime_ms = 60 * 60'000, .labels = {{"run", run.run_id}}};
  });
  const auto tools = mayura::sandbox_tools(per_run->source(), {.name = "workspace", .exec = true, .write = true});

  // What the model is offered, and how its calls find their tool.
  json offered = json::array();
  std::map<std::string, const mayura::Tool*> by_name;
  for (const auto& tool : tools) {
    offered.push_back({{"name", tool.definition.name},
                       {"description", tool.definition.description},
                       {"input_schema", tool.definition.input_schema}});
    by_name[tool.definition.name] = &tool;
  }

  // One run: its grants, and a scope that releases its sandbox however it ends.
  mayura::RunContext run{.run_id = "run-42"};
  for (const auto& tool : tools)
    run.permissions.insert(tool.definition.permissions.begin(), tool.definition.permissions.end());
  const auto scope = mayura::run_scope(per_run, run.run_id);
  for (const json& call : model_turns()) {
    json result;
    try {
      result = by_name.at(call["name"])->call(call["input"], run);
    } catch (const mayura::SandboxError& e) {
      result = {{"error", mayura::reason_name(e.reason())}, {"message", e.what()}};
    }
    std::cout << call["name"].get<std::string>() << " -> " << result.dump() << "\n";  // back to the model
  }
}
