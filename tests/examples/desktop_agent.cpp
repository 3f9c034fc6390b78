// The README's computer-use example, built and run as a test so it cannot
// rot: a run's sandbox has a desktop, and its tools go to a model, whose
// screenshots come back as image blocks; a scripted "model" stands in for
// the API call.
#include <iostream>
#include <map>
#include <mayura/native.hpp>
#include <mayura/sandbox.hpp>
#include <nlohmann/json.hpp>

using nlohmann::json;

// What a computer-use model would answer, one tool call a turn.
std::vector<json> model_turns() {
  return {{{"name", "screen_screenshot"}, {"input", json::object()}},
          {{"name", "screen_click"}, {"input", {{"x", 640}, {"y", 400}}}},
          {{"name", "screen_type"}, {"input", {{"text", "hello\n"}}}},
          {{"name", "screen_key"}, {"input", {{"keys", "ctrl+a"}}}},
          {{"name", "screen_cursor"}, {"input", json::object()}}};
}

int main() {
  auto sandboxes =
      mayura::create_sandboxes(mayura::native_sandboxes(), {.max_sandboxes = 8, .max_lifetime_ms = 60 * 60'000});
  auto per_run = mayura::sandbox_per_run(sandboxes, [](const mayura::RunInfo& run) {
    return mayura::CreateOptions{
        .lifetime_ms = 60 * 60'000, .labels = {{"run", run.run_id}}, .desktop = mayura::DesktopSize{1280, 800}};
  });
  // The definitions tell the model the screen: 1280x800, as each run's is.
  const auto tools = mayura::sandbox_tools(per_run->source(),
                                           {.name = "screen", .read = false, .desktop = true, .screen = {1280, 800}});
  std::map<std::string, const mayura::Tool*> by_name;
  for (const auto& tool : tools) by_name[tool.definition.name] = &tool;

  mayura::RunContext run{.run_id = "run-7"};
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
    // A screenshot is the image block a model API takes as a tool result.
    if (result.value("type", "") == "image") {
      std::cout << call["name"].get<std::string>() << " -> image " << result["source"]["media_type"].get<std::string>()
                << ", " << result["source"]["data"].get<std::string>().size() << " base64 bytes\n";
    } else {
      std::cout << call["name"].get<std::string>() << " -> " << result.dump() << "\n";
    }
  }
}
