#pragma once
// One native sandbox, as the limits layer sees it (a SandboxBackend).

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "activity.hpp"
#include "cgroups.hpp"
#include "cleaner.hpp"
#include "kept_sandbox.hpp"
#include "launch.hpp"
#include "mayura/netfilter/port_forward.hpp"
#include "mayura/netfilter/sandbox_network.hpp"
#include "mayura/provider.hpp"
#include "protocol.hpp"
#include "records.hpp"
#include "sandbox_disk.hpp"
#include "snapshot_store.hpp"
#include "volume_store.hpp"
#include "tenant_shares.hpp"

namespace mayura::native {

// What must be torn down when a sandbox ends, whoever ends it: release, the
// lifetime reaper, or the provider going away.
class SandboxCore {
 public:
  records::SlotLease lease;
  cgroups::SandboxCgroup cgroup;
  // Its place in its tenant's share of the cpu (after `cgroup`, which it
  // weighs: it goes first). Left as the sandbox ends.
  TenantShares::Member tenancy;
  InitProcess init;
  // The sandbox's network namespace: held while a network or a published
  // port needs it, opened again from the init when one comes.
  UniqueFd netns;
  netfilter::NetworkContext* network_context = nullptr;  // set at create
  // Published ports: the sandbox's port -> its forwarder on the host's
  // 127.0.0.1. Set at create, before the sandbox is handed out.
  std::map<int, std::unique_ptr<netfilter::PortForwarder>> ports;
  std::string hostname;
  std::string workdir;
  UniqueFd image_hold;  // a stored image's shared lock: its layers stay while the sandbox runs
  SandboxDisk disk;     // its workdir's and /tmp's disk, if it has one: removed as it ends (under disk_mutex_)
  // Its volumes, held while it lives (let go as it ends, after its mounts).
  std::vector<HeldVolume> volumes;
  // The I/O bounds on its disk's and volumes' devices (none if empty):
  // lifted while the engine writes the disk out for a snapshot, and as it
  // ends, so that neither waits on the sandbox's own bound.
  std::vector<dev_t> io_devices;
  cgroups::IoBounds io_bounds;
  // Sets them (bounded) or lifts them: a sandbox ending may have no cgroup
  // left to write to, which is no failure.
  void bound_io(bool bounded) const;
  // Where its snapshots go (the provider's store, which it may outlive).
  std::shared_ptr<const SnapshotStore> snapshots;
  std::map<std::string, std::string> base_env;  // every command's, before the exec's own
  // The desktop helper's memfd (the provider's, which outlives every
  // sandbox) for a sandbox created with a desktop; else -1.
  int desktop_helper = -1;
  bool commands_ahead = true;  // NativeOptions::commands_ahead
  // The provider's record of its callers' calls (held here, as a sandbox may
  // outlive its provider). Set by the build that makes the core.
  std::shared_ptr<Activity> activity;
  // Live restore: what a later engine needs to take the sandbox back, and
  // the state directory its init's socket is in (empty where the provider's
  // sandboxes do not outlive it).
  KeptSandbox kept;
  std::string state_dir;
  // Hands the init a socket where a later engine can reach it, with its
  // deadline (`deadline_ms`, CLOCK_BOOTTIME), so that it outlives this
  // engine, and writes the record. Throws SandboxError naming the step.
  void outlive_engine(const std::string& state_dir, std::int64_t deadline_ms);
  // Writes what the caller keeps with the sandbox into its record. GONE if
  // it has ended; INVALID_INPUT where the provider's sandboxes do not
  // outlive it.
  void keep(const std::string& caller);

  // What the sandbox's namespace reaches: none while null. Set at create,
  // before the sandbox is handed out; changed by set_network under
  // network_mutex_.
  std::unique_ptr<netfilter::SandboxNetwork> network;

  // A command's variables before the exec's own: the network's (proxy
  // variables), then the create's, which win.
  std::map<std::string, std::string> command_env() const;
  // Changes the network; GONE if the sandbox has ended.
  void set_network(const Network& next);

  // Stops every process of the sandbox at once, or lets them go on (the
  // cgroup2 freezer); GONE if the sandbox has ended.
  void freeze(bool frozen);
  // A sandbox taken back: whether it was found stopped (paused), and so is.
  void found_frozen(bool frozen);
  bool frozen();
  // Copies its disk into `owner`'s snapshot `name`, its processes stopped
  // only while the disk is written out and read (and left as they were if
  // paused). INVALID_INPUT without a disk; GONE if the sandbox has ended.
  Snapshot snapshot(const std::string& owner, const std::string& name);

  // The host URL of a published port; GONE if the sandbox has ended.
  std::string url(int port);
  // Sends one request to the init; GONE if the sandbox has ended.
  void send(const std::string& bytes, const std::vector<int>& fds);
  // The same where nothing must wait: false, and nothing sent, if another
  // send holds the socket, the init's queue is full, or the sandbox ended.
  bool try_send(const std::string& bytes, const std::vector<int>& fds) noexcept;
  // Asks the init to start the next command's process ahead in the spare
  // command cgroup `dir`, after a quiet moment. Never waits: a busy init or
  // a send under way means none this time.
  void ask_standby(int dir) noexcept;
  // The same, started at once, and waited for (at most `timeout_ms`) until
  // the init says whether it cloned one: true if it did. Once it returns,
  // no process of this request is still to come; it throws INTERNAL at the
  // bound, when one still may.
  bool start_standby_now(int dir, int timeout_ms, const std::stop_token& cancellation);
  // Ends the sandbox and removes everything of it. Idempotent, thread-safe;
  // every call returns once the removal is done.
  void end() noexcept;
  // The first half of end(): from its return nothing of the sandbox runs
  // (every process of it has SIGKILL pending) and every later call is GONE.
  // True for the first caller, who then owes the second half, finish().
  bool stop() noexcept;
  // The second half: reaps the init and removes the network, the cgroups
  // and the record. Once, after a stop() that returned true.
  void finish() noexcept;
  // False from the moment an end() starts.
  bool alive() const noexcept;
  // If an end() has started, waits until it is done.
  void wait_ended() const noexcept;
  // Throws GONE; first ends the sandbox if no end() has started (its init
  // died on its own), without waiting for one under way.
  [[noreturn]] void gone_once_ended();

 private:
  static std::vector<int> standby_fds(int dir, int v1_procs);
  mutable std::mutex mutex_;          // held by a send, and by end() while it removes
  mutable std::mutex network_mutex_;  // held while the network changes or goes
  std::mutex freeze_mutex_;           // held while a freeze, a thaw or a snapshot is under way
  bool frozen_ = false;               // under freeze_mutex_
  std::mutex disk_mutex_;             // held while a snapshot reads the disk, and as it goes
  std::atomic<bool> ending_{false};   // set as an end() starts
  std::atomic<bool> finished_{false};
};

class NativeSandbox final : public SandboxBackend {
 public:
  // `cleaner` finishes the removal of a released sandbox off the caller's
  // path, while the provider lives (after it, nothing is left to remove).
  // `first_command`: the number of its first command's cgroup (past those
  // still there, in a sandbox taken back from an engine before this one).
  NativeSandbox(std::shared_ptr<SandboxCore> core, std::weak_ptr<Cleaner> cleaner, std::uint64_t first_command = 1)
      : core_(std::move(core)), cleaner_(std::move(cleaner)), next_command_(first_command) {}
  ~NativeSandbox() override { release(); }

  ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options) override;
  // On the engine's reactor: no thread of its own.
  void async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done) override;
  std::string read_file(const std::string& path, const ReadOptions& options) override;
  void write_file(const std::string& path, std::string_view data, const FileOptions& options) override;
  std::vector<FileEntry> list(const std::string& path, const FileOptions& options) override;
  void remove(const std::string& path, const FileOptions& options) override;
  void async_read_file(const std::string& path, const ReadOptions& options, ReadCompletion done) override;
  void async_write_file(const std::string& path, std::string data, const FileOptions& options,
                        DoneCompletion done) override;
  void async_list(const std::string& path, const FileOptions& options, ListCompletion done) override;
  void async_remove(const std::string& path, const FileOptions& options, DoneCompletion done) override;
  std::string url(int port) override;
  std::string desktop(const DesktopAction& action, std::stop_token cancellation) override;
  std::string workdir() const override { return core_->workdir; }
  void set_network(const Network& network) override { core_->set_network(network); }
  void pause() override { core_->freeze(true); }
  void resume() override { core_->freeze(false); }
  Snapshot snapshot(const std::string& owner, const std::string& name) override { return core_->snapshot(owner, name); }
  void keep(const std::string& record) override { core_->keep(record); }
  void release() noexcept override;
  bool alive() const noexcept override { return core_->alive(); }

 private:
  std::string absolute(const std::string& path) const;
  std::shared_ptr<SandboxCore> core_;
  std::weak_ptr<Cleaner> cleaner_;
  std::atomic<std::uint64_t> next_command_{1};
};

}  // namespace mayura::native
