#pragma once
// What a provider implements. Sandboxes (the limits layer) checks every
// argument before it reaches these calls and every result before a caller
// sees it, so a provider may assume well-formed input.

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "mayura/runtime.hpp"
#include "mayura/types.hpp"

namespace mayura {

class SandboxBackend {
 public:
  virtual ~SandboxBackend() = default;

  virtual ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options) = 0;
  // Starts the command and calls `done` once with its result or failure, on
  // any thread. What fails before it starts may be thrown instead. The
  // default runs exec() on a blocking thread of its runtime (below); a
  // provider that can wait without one (the native provider, on its
  // reactor) overrides it.
  using ExecCompletion = std::function<void(std::exception_ptr, ExecResult)>;
  virtual void async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done);
  // The file calls the same way (by default, each on a blocking thread).
  using ReadCompletion = std::function<void(std::exception_ptr, std::string)>;
  using ListCompletion = std::function<void(std::exception_ptr, std::vector<FileEntry>)>;
  using DoneCompletion = std::function<void(std::exception_ptr)>;
  virtual void async_read_file(const std::string& path, const ReadOptions& options, ReadCompletion done);
  virtual void async_write_file(const std::string& path, std::string data, const FileOptions& options,
                                DoneCompletion done);
  virtual void async_list(const std::string& path, const FileOptions& options, ListCompletion done);
  virtual void async_remove(const std::string& path, const FileOptions& options, DoneCompletion done);
  virtual std::string read_file(const std::string& path, const ReadOptions& options) = 0;
  virtual void write_file(const std::string& path, std::string_view data, const FileOptions& options) = 0;
  virtual std::vector<FileEntry> list(const std::string& path, const FileOptions& options) = 0;
  virtual void remove(const std::string& path, const FileOptions& options) = 0;
  virtual std::string url(int port) = 0;
  // This sandbox's working directory, when it is not the provider's (an
  // image's WorkingDir). Empty: the provider's.
  virtual std::string workdir() const { return {}; }
  // Changes the running sandbox's network (already checked). A provider that
  // cannot fails UNSUPPORTED.
  virtual void set_network(const Network& network);
  // One action on the sandbox's desktop (created with one; the action is
  // checked against its screen already): a screenshot's PNG bytes, the
  // cursor as "X Y", nothing for the input actions. A provider without a
  // desktop fails UNSUPPORTED.
  virtual std::string desktop(const DesktopAction& action, std::stop_token cancellation);
  // Stops every process of the sandbox at once, where it is, and lets them
  // all go on as they were. Each returns once done. A provider that cannot
  // fails UNSUPPORTED (Features::pause says which can).
  virtual void pause();
  virtual void resume();
  // Copies the sandbox's disk, consistently (its processes stopped while it
  // is read), into the snapshot `name` of `owner`, replacing one of that
  // name atomically: a failure or a crash leaves the old one or the new. A
  // provider that cannot fails UNSUPPORTED; a sandbox with no disk,
  // INVALID_INPUT.
  virtual Snapshot snapshot(const std::string& owner, const std::string& name);
  // `count` sandboxes from a copy of this one's disk, as `options` says (the
  // original's create, with the fork's lifetime): all, or a throw and none.
  // By default none are made here (an empty list): the limits layer then
  // copies the disk into a snapshot and creates each from it. A provider
  // whose sandboxes live elsewhere (mayurad's) forks there.
  virtual std::vector<std::unique_ptr<SandboxBackend>> fork(int count, const CreateOptions& options);
  // Keeps `record` (the caller's bytes, in place of any kept before) with
  // the sandbox, for a later provider to hand back with it should this
  // process end while the sandbox lives (SandboxProvider::restore). A
  // provider whose sandboxes end with it fails INVALID_INPUT.
  virtual void keep(const std::string& record);
  // Ends the sandbox and everything in it (a paused one too). Called once;
  // must not throw.
  virtual void release() noexcept = 0;
  // True while the sandbox is running (false once its lifetime ended).
  virtual bool alive() const noexcept = 0;

  // Where the default async forms run their blocking calls: the provider's
  // runtime, which the limits layer gives every backend its provider
  // creates. A backend used on its own makes one at its first such call.
  void use_runtime(std::shared_ptr<Runtime> runtime);

 protected:
  std::shared_ptr<Runtime> runtime();

 private:
  std::mutex runtime_mutex_;
  std::shared_ptr<Runtime> runtime_;
};

class SandboxProvider {
 public:
  virtual ~SandboxProvider() = default;

  virtual std::string id() const = 0;
  virtual Features features() const = 0;
  virtual std::string workdir() const = 0;
  virtual std::int64_t max_lifetime_ms() const = 0;
  virtual std::unique_ptr<SandboxBackend> create(const CreateOptions& options, std::stop_token cancellation) = 0;
  // The snapshots `owner` (a create's tenant) has, and the removal of one
  // (NOT_FOUND if it has none of that name). By default none.
  virtual std::vector<Snapshot> snapshots(const std::string& owner);
  virtual void delete_snapshot(const std::string& owner, const std::string& name);
  // `owner`'s volumes: made empty of `size_mib` (ALREADY there: INVALID_INPUT),
  // listed, and removed (NOT_FOUND if none; INVALID_INPUT while a sandbox
  // uses it). By default UNSUPPORTED, none, NOT_FOUND.
  virtual Volume create_volume(const std::string& owner, const std::string& name, std::int64_t size_mib);
  virtual std::vector<Volume> volumes(const std::string& owner);
  virtual void delete_volume(const std::string& owner, const std::string& name);

  // A sandbox that an earlier process's provider left running, taken back
  // as this one started (live restore): with what its caller kept with it
  // (SandboxBackend::keep) and what is left of its lifetime.
  struct Restored {
    std::unique_ptr<SandboxBackend> backend;
    std::string record;
    std::int64_t remaining_ms = 0;
    bool paused = false;  // found paused (Sandbox::pause), and left so
  };
  // Hands out the sandboxes this provider took back, once (later calls get
  // none). By default none: a provider whose sandboxes end with it.
  virtual std::vector<Restored> restore();

  // The threads this provider's calls run on (mayura/runtime.hpp): its own,
  // shared with every sandbox it made, which may outlive it.
  const std::shared_ptr<Runtime>& runtime() const noexcept { return runtime_; }

 private:
  std::shared_ptr<Runtime> runtime_ = Runtime::make();
};

}  // namespace mayura
