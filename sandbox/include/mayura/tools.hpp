#pragma once
// Tools for agents: what an agent calls to work in a sandbox, each a
// definition a model API takes (a name, a description, a JSON Schema for its
// input) and a handler that takes the model's JSON input and gives a JSON
// result. Only reading is on by default; exec, write, remove and the desktop
// each need an option of their own, and every call needs the permissions the
// run granted.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "mayura/async.hpp"
#include "mayura/sandboxes.hpp"

namespace mayura {

// What a run may still spend, in millionths of whatever unit the host
// counts (cents, credits). Thread-safe.
class RunBudget {
 public:
  explicit RunBudget(std::int64_t micros) : remaining_(micros) {}
  // Takes `micros` if that much is left; false (and nothing taken) if not.
  bool charge(std::int64_t micros);
  // Gives back what was charged for something that did not happen.
  void refund(std::int64_t micros);
  std::int64_t remaining() const;

 private:
  mutable std::mutex mutex_;
  std::int64_t remaining_;
};

// The run a tool call belongs to, and what it was granted.
struct RunContext {
  std::string run_id;
  // "tool:NAME.VERB", "sandbox:NAME:VERB", "effect:read", "effect:write".
  std::set<std::string> permissions;
  std::shared_ptr<RunBudget> budget;  // none: no budget to charge
  std::stop_token cancellation;
};

enum class ToolEffect { read, write };
std::string_view tool_effect_name(ToolEffect effect) noexcept;

struct ToolDefinition {
  std::string name;  // for a model API: NAME_VERB (letters, digits, _ and -)
  std::string id;    // NAME.VERB, as permissions name it
  std::string description;
  nlohmann::json input_schema;  // JSON Schema (draft 2020-12 subset: object, properties, required)
  ToolEffect effect = ToolEffect::read;
  std::vector<std::string> permissions;  // every one is needed
};

struct Tool {
  ToolDefinition definition;
  // Checks the permissions and the input, then acts. Throws SandboxError:
  // PERMISSION_DENIED (nothing reached a sandbox), INVALID_INPUT (the input
  // does not fit the schema), LIMIT_REACHED (over budget), and whatever the
  // sandbox says.
  std::function<nlohmann::json(const nlohmann::json& input, const RunContext& run)> call;
};

// The asynchronous form of a tool call, run on the runtime of `sandboxes`
// (those the tool's sandbox comes from): completes `token` with the result
// (or the SandboxError) on the token's executor, else on the executor of
// `sandboxes`; Asio per-operation cancellation stops the call as the run's
// cancellation does.
template <class Token>
auto async_call(const Tool& tool, nlohmann::json input, RunContext run, const Sandboxes& sandboxes, Token&& token) {
  return detail::async_run(sandboxes.runtime(), sandboxes.executor(), std::forward<Token>(token),
                           [call = tool.call, input = std::move(input), run = std::move(run)](std::stop_token stop) {
                             detail::JoinedStop joined(std::move(stop), run.cancellation);
                             RunContext r = run;
                             r.cancellation = joined.token();
                             return call(input, r);
                           });
}

// Where the tools find their sandbox: one that exists, or the run's own.
using SandboxSource = std::function<Sandbox(const RunContext& run)>;

struct SandboxToolsOptions {
  std::string name = "sandbox";  // letters, digits, _ and -
  bool read = true;              // read, list, url
  bool exec = false;
  bool write = false;
  bool remove = false;
  // Commands left running (Sandbox::start): start, input, signal and stop
  // (write); commands, output and wait (read). A later call of the run, or
  // of another run on the same sandbox, reads what a command printed since.
  bool background = false;
  // The desktop's tools: screenshot and cursor (read); click, move, drag,
  // scroll, type and key (write). Their definitions tell the model the
  // screen's size: `screen`, or a Sandbox's own when one is given.
  bool desktop = false;
  DesktopSize screen;
  std::int64_t exec_timeout_ms = 5 * 60 * 1000;  // the most a command, or a wait for one, may take
  std::int64_t exec_cost_micros = 0;             // charged per command to the run's budget
  std::size_t max_output_bytes = 32 * 1024;      // of each stream, to the model; the middle left out
  std::size_t max_read_bytes = 1 << 20;
  std::size_t max_write_bytes = 1 << 20;
};

// The tools for `options` (INVALID_INPUT for a bad name or size). A desktop
// tool called on a sandbox whose screen is not the size its definition told
// the model fails INVALID_CONFIG, before any action.
std::vector<Tool> sandbox_tools(SandboxSource source, const SandboxToolsOptions& options);
// With `desktop`, the sandbox must have one; its size is the tools'.
std::vector<Tool> sandbox_tools(const Sandbox& sandbox, const SandboxToolsOptions& options);

// Per-run sandboxes: a run's sandbox is created the first time one of its
// tools needs it (once, however many ask at once), and released when the
// run ends.
struct RunInfo {
  std::string run_id;
};

class SandboxPerRun {
 public:
  // Releases every run's sandbox still held.
  ~SandboxPerRun();
  SandboxPerRun(const SandboxPerRun&) = delete;
  SandboxPerRun& operator=(const SandboxPerRun&) = delete;

  // For sandbox_tools: the run's sandbox, created on first use. A run
  // already released gets GONE, so a late tool call cannot make a sandbox
  // that outlives its run.
  SandboxSource source() const;
  // Ends the run's sandbox, if it has one. Safe to call again, from any
  // thread, and for a run that never needed one.
  void release(const std::string& run_id) noexcept;
  // Sandboxes held for runs now.
  std::size_t size() const;

  // The run-finished hook: `release` as a function a host's "finally"
  // stage calls with the run's id, whether the run ended well, failed or
  // was cancelled.
  std::function<void(const std::string& run_id)> on_finally() const;

  // The same as a scope: the run's sandbox is released when it goes, on
  // every way out of the block that runs the agent.
  class RunScope {
   public:
    RunScope(std::shared_ptr<SandboxPerRun> owner, std::string run_id)
        : owner_(std::move(owner)), run_id_(std::move(run_id)) {}
    ~RunScope() {
      if (owner_) owner_->release(run_id_);
    }
    RunScope(RunScope&&) noexcept = default;
    RunScope(const RunScope&) = delete;
    RunScope& operator=(const RunScope&) = delete;

   private:
    std::shared_ptr<SandboxPerRun> owner_;
    std::string run_id_;
  };

 private:
  friend std::shared_ptr<SandboxPerRun> sandbox_per_run(Sandboxes, std::function<CreateOptions(const RunInfo&)>);
  struct State;
  explicit SandboxPerRun(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

std::shared_ptr<SandboxPerRun> sandbox_per_run(Sandboxes sandboxes,
                                               std::function<CreateOptions(const RunInfo&)> options);

// A scope that releases `run_id`'s sandbox when it goes.
inline SandboxPerRun::RunScope run_scope(const std::shared_ptr<SandboxPerRun>& per_run, std::string run_id) {
  return SandboxPerRun::RunScope(per_run, std::move(run_id));
}

}  // namespace mayura
