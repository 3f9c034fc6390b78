#pragma once
// The service's resources: what each method and path does with a request's
// body, for one client. Every call here blocks (it is the provider's), so
// the server runs it off its connection threads. Exec is the one resource
// whose answer streams; the server runs it, with what exec_target finds.

#include <condition_variable>
#include <mutex>
#include <exception>
#include <map>
#include <optional>
#include <chrono>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "metrics.hpp"
#include "registry.hpp"
#include "route_table.hpp"
#include "wire.hpp"

namespace mayura::service {

struct Reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  unsigned retry_after_s = 0;  // a Retry-After header, if not 0
};

Reply error_reply(Reason reason, std::string_view message);
Reply error_reply(unsigned status, Reason reason, std::string_view message);

struct ServiceInfo {
  std::string provider_id;
  std::int64_t max_lifetime_ms = 0;
  std::vector<NetworkKind> network;  // the kinds a create may ask for
};

// A file call the server makes on the provider's async forms (read, write,
// remove a file; list a directory), once the request is known to be one.
struct FileCall {
  enum class Kind { read, write, remove, list } kind = Kind::read;
  Sandbox sandbox;
  std::string path;
  ReadOptions read;
};

// A wait for a background command's end, which the server makes on a timer
// (Serving::command_wait) once the request is known to be one.
struct CommandWait {
  Sandbox sandbox;
  std::string command;
  std::chrono::milliseconds timeout{0};
};

// An attachment to a background command (Serving::attach), once the
// request is known to be one: where it starts in each stream, and whether
// it follows the command to its end.
struct CommandAttach {
  Sandbox sandbox;
  std::string command;
  std::uint64_t stdout_from = 0;
  std::uint64_t stderr_from = 0;
  bool follow = true;
};

class Routes {
 public:
  // `default_memory_mib` (0: none) is given to every create that names no
  // memory, so that what a client holds is counted whole.
  // `hidden_paths`: host paths a failure's message never shows a client
  // (each is said as its name instead).
  Routes(Sandboxes sandboxes, ServiceInfo info, Registry& registry, Metrics& metrics, std::size_t max_json_bytes,
         std::size_t max_file_bytes, std::int64_t default_memory_mib = 0,
         std::vector<std::pair<std::string, std::string>> hidden_paths = {})
      : sandboxes_(std::move(sandboxes)),
        info_(std::move(info)),
        registry_(registry),
        metrics_(metrics),
        max_json_bytes_(max_json_bytes),
        max_file_bytes_(max_file_bytes),
        default_memory_mib_(default_memory_mib),
        hidden_paths_(std::move(hidden_paths)) {}

  // A snapshot `name` of `o`'s disk, its owner's, within the sum of its
  // snapshots' sizes its quota allows (LIMIT_REACHED, naming the setting,
  // before the copy; the whole disk counted for the new one, and for each
  // being taken).
  Snapshot take_snapshot(const Owned& o, const std::string& name);
  // The client's new volume, within the sum of its volumes' sizes its quota
  // allows (LIMIT_REACHED, naming the setting, before anything is made).
  Volume create_volume(const std::string& name, std::int64_t size_mib, const Client& client);
  // A failure's message as a client is told it: no hidden host path in it.
  std::string told(std::string message) const;

  // How large a body the request may have: its head is matched
  // (match_route) once, before its body is read.
  std::size_t body_limit(const RouteMatch& match) const;

  // Every resource served as a blocking call (route_table.hpp). Never throws.
  Reply handle(const RouteMatch& match, const std::string& body, const Client& client) noexcept;

  // For a route served as a file call (route_table.hpp's
  // Serving::file_call): the call to make, or the reply that refuses it.
  std::variant<FileCall, Reply> file_call(const RouteMatch& match, const Client& client) noexcept;
  // The answer to a file call that ended (`error`, or what it read or listed).
  Reply file_reply(const FileCall& call, const std::exception_ptr& error, std::string data,
                   const std::vector<FileEntry>& entries) noexcept;

  // For a command's wait: what to wait for, or the reply that refuses it.
  std::variant<CommandWait, Reply> command_wait(const RouteMatch& match, const Client& client) noexcept;
  // Whether the command has ended (or can no longer be looked at: the
  // reply then says why). Never blocks.
  static bool command_ended(const CommandWait& wait) noexcept;
  // The command as it is now: ended, or running at the wait's timeout.
  Reply command_wait_reply(const CommandWait& wait) noexcept;

  // For an attachment: what to attach to, or the reply that refuses it
  // (also one that is no WebSocket upgrade: `upgrade` false).
  std::variant<CommandAttach, Reply> command_attach(const RouteMatch& match, const Client& client,
                                                    bool upgrade) noexcept;

  // For an exec: the client's sandbox and the request; SandboxError (GONE
  // for an id the client does not have) otherwise.
  std::pair<Sandbox, ExecRequest> exec_target(const std::string& id, const std::string& body, const Client& client);

  // A run (POST /v1/run): one command in a sandbox made for it and released
  // when it ends, in one request where create, exec and release take three.
  struct Run {
    Sandbox sandbox;
    std::string id;
    ExecRequest request;
  };
  // Makes the run's sandbox for the client as POST /v1/sandboxes would (it
  // blocks: the provider's create). Never throws: a failure is the reply.
  std::variant<Run, Reply> start_run(const std::string& body, const Client& client) noexcept;
  // A run's command has ended and its answer is about to end: from now a
  // create refused for a limit waits for its release (the client may
  // already ask for the next one, and must find the count as it left it).
  void run_ending() noexcept;
  // Releases a run's sandbox, once its command has ended. Blocks.
  void end_run(const Run& run) noexcept;

  Metrics& metrics() { return metrics_; }
  const Sandboxes& sandboxes() const { return sandboxes_; }

 private:
  Reply dispatch(const RouteMatch& match, const std::string& body, const Client& client);
  // The reply for the failure being handled (a catch block's), counted.
  Reply failure_reply() noexcept;
  Sandbox owned(const std::string& id, const Client& client);
  // A create for the client, counted; images by name only.
  Owned create(const json& request, const Client& client);
  // registry_.create, where a refusal for a limit while runs are being
  // released waits for them and tries again.
  Owned create_counting_runs(const CreateOptions& options, const Client& client);

  // Runs whose answer has ended or is ending, and whose sandbox is still
  // being released; `runs_ended_` counts releases done.
  std::mutex runs_mutex_;
  std::condition_variable runs_changed_;
  std::size_t runs_ending_ = 0;
  std::uint64_t runs_ended_ = 0;

  // The sizes of the volumes and snapshots being made, by owner: counted
  // as held until each is made (and listed) or refused.
  struct Making {
    std::mutex mutex;
    std::map<std::string, std::int64_t> mib;
  };
  // Holds `mib` of `owner`'s in `making` until it goes, if `held` (what
  // the owner has now, with `making`'s) leaves room under `most`; else
  // throws LIMIT_REACHED with `what`.
  class MakingLease;
  Making volumes_making_;
  Making snapshots_making_;

  Sandboxes sandboxes_;
  ServiceInfo info_;
  Registry& registry_;
  Metrics& metrics_;
  std::size_t max_json_bytes_;
  std::size_t max_file_bytes_;
  std::int64_t default_memory_mib_;
  std::vector<std::pair<std::string, std::string>> hidden_paths_;
};

}  // namespace mayura::service
