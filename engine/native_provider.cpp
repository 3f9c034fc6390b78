// The native provider: checks a create's input, then builds the sandbox in
// order: an id range, a record, a cgroup, the init (namespaces, root,
// privileges), and a deadline.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "cgroups.hpp"
#include "exec.hpp"
#include "mayura/seccomp/profile.hpp"
#include "desktop.hpp"
#include "init_image.hpp"
#include "lifetimes.hpp"
#include "mayura/native.hpp"
#include "mayura/random_id.hpp"
#include "mayura/netfilter/allowlist.hpp"
#include "mayura/netfilter/egress.hpp"
#include "mayura/netfilter/host_link.hpp"
#include "mayura/netfilter/netns_pool.hpp"
#include "mayura/netfilter/port_owners.hpp"
#include "mayura/netfilter/sandbox_network.hpp"
#include "mayura/netfilter/sandbox_services.hpp"
#include "mayura/rootfs/image.hpp"
#include "disk_templates.hpp"
#include "native_sandbox.hpp"
#include "prepared.hpp"
#include "prepared_disks.hpp"
#include "records.hpp"
#include "sandbox_image.hpp"
#include "sys_error.hpp"
#include "trace.hpp"
#include "mayura/resource_limits.hpp"

namespace mayura {
namespace {

// A sandbox made ahead keeps its first command's cgroup ready under this
// name (a sandbox's own commands are numbered from 1).
constexpr const char* kFirstCommand = "cmd-0";

// The engine's way out for sandboxes, from the operator's options.
netfilter::Egress::Options egress_options(const NativeOptions& o) {
  netfilter::Egress::Options e;
  for (const std::string& server : o.dns_servers) {
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address_v4(server, ec);
    if (ec) throw SandboxError(Reason::INVALID_CONFIG, "dns_servers: '" + server + "' is not an IPv4 address");
    e.dns_servers.push_back(a);
  }
  e.dns_wait = std::chrono::seconds(o.dns_wait_s);
  e.rules.allow_private = o.allow_private_addresses;
  for (const std::string& range : o.public_ranges) e.rules.also_public.push_back(netfilter::parse_prefix(range));
  e.rules.never.push_back(netfilter::parse_prefix(o.all_network_pool));  // the sandboxes of network all
  return e;
}

void check_options(const NativeOptions& o) {
  auto invalid = [](const std::string& m) { throw SandboxError(Reason::INVALID_CONFIG, m); };
  if (o.workdir.size() < 2 || o.workdir.front() != '/' || o.workdir.find('/', 1) != std::string::npos ||
      o.workdir == "/proc" || o.workdir == "/dev" || o.workdir == "/tmp" || o.workdir.find("..") != std::string::npos) {
    invalid("workdir must be one directory below / (like /workspace)");
  }
  if (o.uid == 0 || o.gid == 0 || o.uid >= 65536 || o.gid >= 65536)
    invalid("the sandbox user must be a non-root id below 65536");
  if (o.id_slots == 0 ||
      static_cast<std::uint64_t>(o.id_base) + static_cast<std::uint64_t>(o.id_slots) * 65536 > 0xFFFFFFFEull ||
      o.id_base < 65536) {
    invalid("id_base and id_slots must give ranges above host id 65535 and below 2^32-1");
  }
  if (o.workdir_mib == 0 || o.tmp_mib == 0 || o.shm_mib == 0 || o.tmpfs_inodes == 0)
    invalid("tmpfs sizes must be positive");
  if (o.state_dir.empty() || o.state_dir.front() != '/') invalid("state_dir must be an absolute path");
  if (o.disk_dir.empty() || o.disk_dir.front() != '/') invalid("disk_dir must be an absolute path");
  if (o.snapshot_dir.empty() || o.snapshot_dir.front() != '/') invalid("snapshot_dir must be an absolute path");
  if (o.volume_dir.empty() || o.volume_dir.front() != '/') invalid("volume_dir must be an absolute path");
  if (!(o.default_cpus >= 0 && o.default_cpus <= kMaxCpus))
    invalid("default_cpus must be between 0 (every cpu) and 1024");
  if (o.default_memory_mib != 0 && (o.default_memory_mib < kMinMemoryMib || o.default_memory_mib > kMaxMemoryMib)) {
    invalid("default_memory_mib must be 0 (no bound) or between 16 and 2^30");
  }
  if (o.default_pids < 0 || o.default_pids > kMaxPids) invalid("default_pids must be 0 (no bound) or at most 2^22");
  if (o.total_memory_mib != 0 && (o.total_memory_mib < 64 || o.total_memory_mib > kMaxMemoryMib))
    invalid("total_memory_mib must be 0 (no bound) or between 64 and 2^30");
  if (o.total_pids != 0 && (o.total_pids < 64 || o.total_pids > kMaxPids))
    invalid("total_pids must be 0 (no bound) or between 64 and 2^22");
  if (o.dns_wait_s < 1 || o.dns_wait_s > 30) invalid("dns_wait_s must be between 1 and 30 seconds");
  netfilter::check_pool(o.all_network_pool);
  egress_options(o);  // throws on a bad server or range
}

// Every sandbox and every proxied connection holds descriptors in this
// process; the limit (often 1024 soft, and a hard one as low as 20,000) is
// raised as far as the kernel lets root (fs.nr_open), as servers do, so that
// tens of thousands of sandboxes fit. Commands get their own bound
// (RLIMIT_NOFILE in the init).
void raise_open_file_limit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return;
  rlim_t most = files.rlim_max;
  std::ifstream nr_open("/proc/sys/fs/nr_open");
  if (unsigned long kernel = 0; nr_open >> kernel && kernel > most) most = kernel;
  const rlimit raised{most, most};
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;  // not allowed to raise the hard limit: up to it
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
}

// Below this much available memory the host is near its end: a new sandbox
// (its namespaces alone take half a MiB of kernel memory) is refused, and
// named so, instead of pushing the host into reclaim where every step
// stalls and the engine's own helpers time out.
constexpr long kMinAvailableMib = 256;

void check_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    const long mib = std::strtol(line.c_str() + 13, nullptr, 10) / 1024;  // kB; an unreadable one reads as 0
    if (mib < kMinAvailableMib) {
      throw SandboxError(Reason::LIMIT_REACHED, "the host's memory is nearly exhausted (MemAvailable " +
                                                    std::to_string(mib) + " MiB, below " +
                                                    std::to_string(kMinAvailableMib) + ")");
    }
    return;
  }
}

// The stores' directories as the kernel names them (no symlink, no
// trailing slash): a loop device's backing file is told by its path, which
// must be the one the engine compares. Relative ones are left for
// check_options to refuse.
NativeOptions with_canonical_dirs(NativeOptions o) {
  for (std::string* dir : {&o.disk_dir, &o.snapshot_dir, &o.volume_dir}) {
    std::error_code ec;
    if (!dir->empty() && dir->front() == '/') {
      const auto canonical = std::filesystem::weakly_canonical(*dir, ec);
      if (!ec) *dir = canonical.string();
      while (dir->size() > 1 && dir->back() == '/') dir->pop_back();
    }
  }
  return o;
}

// The seccomp filters a sandbox's commands run under, installed in order.
using Filters = std::vector<seccomp::Program>;

class NativeProvider final : public SandboxProvider {
 public:
  explicit NativeProvider(const NativeOptions& options) : options_(with_canonical_dirs(options)) {
    check_options(options_);
    if (::geteuid() != 0) throw SandboxError(Reason::UNSUPPORTED, "the native provider needs root");
    raise_open_file_limit();
    cgroups::Places& cg = places_.cgroups;
    cg.host = cgroups::detect_host();
    const cgroups::Placement placement = cgroups::prepare_root(options_.cgroup_root, cg.host);
    cg.root = placement.root;
    cg.host = cgroups::enable_v2_controllers(cg.host, cg.host.v2, cg.root, placement.home);
    if (options_.total_memory_mib > 0) cg.totals.memory_bytes = std::uint64_t(options_.total_memory_mib) << 20;
    if (options_.total_pids > 0) cg.totals.pids = static_cast<std::uint64_t>(options_.total_pids);
    cgroups::bound_roots(cg);
    places_.state_dir = options_.state_dir;
    places_.engine = std::make_unique<records::EngineLock>(options_.state_dir, options_.id_slots);
    if (options_.live_restore) take_back_sandboxes();
    records::clean_orphans(options_.state_dir, cg);
    native::remove_orphan_disks(options_.disk_dir);
    snapshots_->remove_orphans();
    default_seccomp_ = {seccomp::default_program()};
    default_limits_ = limits_for(CreateOptions{});
    desktop_memfd_ = native::make_desktop_helper_memfd();
    native::dev_null();
    zygote_.use_program(make_init_memfd(), make_init_memfd);
    prepared_.start();
  }

  std::string id() const override { return "native"; }

  std::vector<Restored> restore() override {
    std::lock_guard lock(restored_mutex_);
    return std::exchange(restored_, {});
  }

  Features features() const override {
    Features f;
    f.stdin = true;
    f.network = {NetworkKind::none, NetworkKind::allowlist, NetworkKind::all};
    f.cpus = places_.cgroups.host.cpu.available();
    f.memory = places_.cgroups.host.memory.available();
    f.pids = places_.cgroups.host.pids.available();
    f.seccomp = true;
    f.ports = true;
    f.desktop = true;   // on an image that carries Xvfb
    f.pause = true;     // the cgroup2 freezer, on every layout
    f.disk = true;      // a loop device's ext4
    f.snapshot = true;  // a copy of that disk's file
    f.volumes = true;   // more of those, kept
    f.disk_io = places_.cgroups.host.io.available();
    f.interactive = true;
    f.terminal = true;  // the sandbox's own devpts
    return f;
  }

  std::string workdir() const override { return options_.workdir; }
  std::int64_t max_lifetime_ms() const override { return options_.max_lifetime_ms; }
  std::vector<Snapshot> snapshots(const std::string& owner) override { return snapshots_->list(owner); }
  void delete_snapshot(const std::string& owner, const std::string& name) override { snapshots_->remove(owner, name); }
  Volume create_volume(const std::string& owner, const std::string& name, std::int64_t size_mib) override {
    return volumes_.create(owner, name, size_mib);
  }
  std::vector<Volume> volumes(const std::string& owner) override { return volumes_.list(owner); }
  void delete_volume(const std::string& owner, const std::string& name) override { volumes_.remove(owner, name); }

  std::unique_ptr<SandboxBackend> create(const CreateOptions& options, std::stop_token cancellation) override {
    StepTimer timer("create");
    const native::ActivityMark call(*activity_);
    // Everything that can be wrong with the input is found before anything is made.
    if (options.network.kind == NetworkKind::allowlist)
      netfilter::Allowlist{options.network.allow};  // throws on a bad pattern
    const cgroups::Limits limits = limits_for(options);
    const Filters filters = seccomp_for(options);
    SandboxImage image = resolve_sandbox_image(options, options_);
    if (options.writable_root && image.image.layers.empty()) {
      throw SandboxError(Reason::INVALID_INPUT, "a writable root needs an image from the image store, not " +
                                                    image.image.name +
                                                    " (the host's and a directory image's files are no sandbox's)");
    }
    native::DiskSource disk = disk_for(options);
    const std::string workdir = image.workdir.empty() ? options_.workdir : image.workdir;
    // Volumes are mounted after the workdir and /tmp: one at either, or
    // above either, would hide it.
    for (const VolumeMount& v : options.volumes) {
      for (const std::string& kept : {workdir, std::string("/tmp")}) {
        if (v.path == kept || kept.starts_with(v.path + "/"))
          throw SandboxError(Reason::INVALID_INPUT,
                             "a volume at " + v.path + " would hide " + kept + " (put it under it)");
      }
    }
    // Held (locked, mounted) now: one missing or in use fails before the
    // sandbox is made.
    std::vector<native::HeldVolume> volumes;
    for (const VolumeMount& v : options.volumes) volumes.push_back(volumes_.hold(options.tenant, v.name, v.read_only));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.lifetime_ms);

    std::shared_ptr<native::SandboxCore> core;
    // Sandboxes made ahead run the default filter (it is fixed at their start).
    if (image.image.host && !options.seccomp_profile && !image.uid && image.workdir.empty() && !disk.mib &&
        !disk.snapshot && volumes.empty())
      core = prepared_.take();
    if (core) {
      try {
        core->tenancy = tenants_->join(options.tenant, core->cgroup);
      } catch (...) {
        core->end();
        throw;
      }
      core->init.to_foreground();
      core->cgroup.renice_command(kFirstCommand, 0);  // made at the pool's priority
    }
    timer.step(core ? "prepared sandbox taken" : "no prepared sandbox");
    if (!core) {
      core = build(image, filters, cancellation, options.tenant, std::move(disk), options.volumes, std::move(volumes),
                   options.writable_root);
      timer.step("built");
    }
    // What is this create's own: its limits, its network, its ports, its env
    // and its lifetime.
    try {
      core->cgroup.apply(limits);
      if (options.disk_io) bound_io(*core, *options.disk_io);
      core->network_context = &network_;
      core->set_network(options.network);
      timer.step("network");
      for (int port : options.ports) {
        core->ports[port] = std::make_unique<netfilter::PortForwarder>(io_.context(), core->netns.get(),
                                                                       static_cast<std::uint16_t>(port), port_owners_,
                                                                       options.ports_owner.value_or(::geteuid()));
      }
    } catch (...) {
      core->end();
      throw;
    }
    // An idle sandbox of network none holds no descriptor of its namespace:
    // a set_network opens it again, from the init.
    if (!core->network && core->ports.empty()) core->netns.reset();
    timer.step("limits and ports");
    core->image_hold = std::move(image.hold);
    core->base_env = base_env(options, image, core->hostname, core->workdir);
    if (options.desktop) {
      core->base_env["DISPLAY"] = ":0";
      core->desktop_helper = desktop_memfd_.get();
      try {
        native::start_desktop(core, *options.desktop, cancellation);
      } catch (...) {
        core->end();
        throw;
      }
      timer.step("desktop");
    }
    reaper_.watch(deadline, core);
    if (options_.live_restore) {
      keep_alive(*core, options, deadline);
      timer.step("kept alive");
    }
    timer.step("ready");
    auto sandbox = std::make_unique<native::NativeSandbox>(core, cleaner_);
    sandbox->use_runtime(runtime());  // its commands wait on the provider's reactor, which it may outlive
    return sandbox;
  }

 private:
  // Live restore: the sandbox outlives this process, to its deadline, with
  // what a later engine needs to take it back in its record.
  void keep_alive(native::SandboxCore& core, const CreateOptions& options,
                  std::chrono::steady_clock::time_point deadline) const {
    native::KeptSandbox& kept = core.kept;
    kept.hostname = core.hostname;
    kept.workdir = core.workdir;
    kept.image = options.image;
    kept.commands_ahead = core.commands_ahead;
    kept.desktop = options.desktop.has_value();
    kept.disk = core.disk ? core.disk.path() : std::string();
    for (const native::HeldVolume& v : core.volumes) kept.volumes.push_back(v.path);
    if (!core.io_devices.empty()) {
      const cgroups::IoBounds& io = core.io_bounds;
      kept.io = {io.read_bytes, io.write_bytes, io.read_ops, io.write_ops};
    }
    kept.env = core.base_env;
    kept.network = options.network;
    kept.ports = options.ports;
    for (int port : options.ports) kept.host_ports.push_back(core.ports.at(port)->host_port());
    kept.ports_owner = options.ports_owner.value_or(::geteuid());
    kept.tenant = options.tenant;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    try {
      core.outlive_engine(options_.state_dir, native::boot_ms() + std::max<std::int64_t>(left.count(), 1));
    } catch (...) {
      core.end();
      throw;
    }
  }

  // Live restore, as the engine starts: every sandbox an engine that ended
  // left running with a record to take it back by.
  void take_back_sandboxes() {
    places_.engine->take_back([this](const records::EngineLock::Left& left, records::SlotLease lease) {
      const std::string name = left.cgroup.substr(left.cgroup.rfind('/') + 1);
      std::shared_ptr<native::SandboxCore> core;
      try {
        core = std::make_shared<native::SandboxCore>();
        core->lease = std::move(lease);
        std::uint64_t first_command = 1;
        take_back(*core, left, name, first_command);
        const auto remaining = core->kept.deadline_ms - native::boot_ms();
        reaper_.watch(std::chrono::steady_clock::now() + std::chrono::milliseconds(remaining), core);
        auto sandbox = std::make_unique<native::NativeSandbox>(core, cleaner_, first_command);
        sandbox->use_runtime(runtime());
        std::lock_guard lock(restored_mutex_);
        restored_.push_back({std::move(sandbox), core->kept.caller, remaining, core->frozen()});
      } catch (const std::exception& e) {
        std::fprintf(
            stderr, "mayura: the sandbox %s an engine before this one left cannot be taken back (%s): it is released\n",
            name.c_str(), e.what());
        // Its cgroup first, whatever of it was taken back: every process
        // of it gone, or the record stays for the next engine to try.
        records::SlotLease& held = core ? core->lease : lease;
        if (!cgroups::remove_orphan(places_.cgroups, left.cgroup)) held.keep_record();
        if (core) core->end();
        ::unlink(native::init_socket_path(options_.state_dir, name).c_str());
      }
    });
  }

  // One sandbox taken back: its record read and checked against what runs,
  // its cgroups, its init reached on its socket, then what this engine
  // holds for it (its image, its tenant's share, its published ports).
  // `first_command`: past the commands' cgroups still there.
  void take_back(native::SandboxCore& core, const records::EngineLock::Left& left, const std::string& name,
                 std::uint64_t& first_command) {
    const std::optional<native::KeptSandbox> kept = native::decode_kept(left.kept);
    if (!kept) throw SandboxError(Reason::INTERNAL, "its record cannot be read");
    if (kept->name != name || left.cgroup != places_.cgroups.root + "/" + name)
      throw SandboxError(Reason::INTERNAL, "its record names another cgroup");
    // Its host ids are its slot's, as this engine gives them: no other
    // sandbox of this engine's can have them.
    if (kept->uid_base != options_.id_base + left.slot * 65536u)
      throw SandboxError(Reason::INTERNAL, "its host ids are not its slot's (idBase changed)");
    core.kept = *kept;
    core.state_dir = options_.state_dir;
    core.cgroup =
        cgroups::SandboxCgroup::existing(places_.cgroups, name, kept->uid_base, kept->uid_base, first_command);
    const auto remaining = kept->deadline_ms - native::boot_ms();
    if (remaining <= 0) throw SandboxError(Reason::GONE, "its lifetime is over");
    // The init: the same process as the record's (its start time), still in
    // the sandbox's cgroup, reached on the socket it holds.
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, kept->pid, 0)));
    if (!pidfd || native::process_start_time(kept->pid) != kept->start_time)
      throw SandboxError(Reason::GONE, "its init has ended");
    if (!cgroups::process_in(kept->pid, left.cgroup)) throw SandboxError(Reason::GONE, "its init is not in its cgroup");
    UniqueFd control = native::connect_to_init(native::init_socket_path(options_.state_dir, name));
    if (!control) fail_step("reaching its init", errno);
    core.init = InitProcess::adopt(kept->pid, std::move(pidfd), std::move(control));
    core.hostname = kept->hostname;
    core.workdir = kept->workdir;
    core.commands_ahead = kept->commands_ahead;
    core.base_env = kept->env;
    core.activity = activity_;
    core.snapshots = snapshots_;
    core.network_context = &network_;
    if (kept->desktop) core.desktop_helper = desktop_memfd_.get();
    if (!kept->image.empty()) {
      CreateOptions named;
      named.image = kept->image;
      core.image_hold = resolve_sandbox_image(named, options_).hold;
    }
    core.tenancy = tenants_->join(kept->tenant, core.cgroup);
    // Its disk and volumes, mounted in its namespace still: this engine's
    // hold on them (and its own mount of the disk, for snapshots).
    if (!kept->disk.empty()) {
      if (!kept->disk.starts_with(options_.disk_dir + "/") || kept->disk.find("/..") != std::string::npos)
        throw SandboxError(Reason::INTERNAL, "its record names a disk outside the disk directory");
      core.disk = native::SandboxDisk::existing(kept->disk);
      core.io_devices.push_back(core.disk.device_number());
    }
    for (const std::string& path : kept->volumes) {
      core.volumes.push_back(volumes_.take_back(path));
      core.io_devices.push_back(core.volumes.back().device);
    }
    if (kept->io.size() == 4) {
      core.io_bounds = {kept->io[0], kept->io[1], kept->io[2], kept->io[3]};
    } else {
      core.io_devices.clear();  // unbounded: nothing to lift or set
    }
    // Stopped by its caller's pause, it stays so; by the dead engine's own
    // doing (a snapshot it did not live to finish), it goes on.
    const bool frozen = cgroups::is_frozen(left.cgroup);
    if (frozen && !kept->paused) core.cgroup.freeze(false, std::chrono::seconds(10));
    core.found_frozen(frozen && kept->paused);
    if (!kept->ports.empty() || kept->network.kind != NetworkKind::none) {
      core.netns = core.init.open_netns();
      if (!core.netns) fail_step("opening its network namespace", errno);
    }
    if (kept->network.kind != NetworkKind::none) {
      core.network = std::make_unique<netfilter::SandboxNetwork>(network_, core.netns.get(), core.lease.slot());
      core.network->take_back(kept->network);
    }
    if (!kept->ports.empty()) {
      for (std::size_t i = 0; i < kept->ports.size(); ++i) {
        const int port = kept->ports[i];
        core.ports[port] = std::make_unique<netfilter::PortForwarder>(
            io_.context(), core.netns.get(), static_cast<std::uint16_t>(port), port_owners_, kept->ports_owner,
            static_cast<std::uint16_t>(kept->host_ports[i]));
        // Another may have taken its port meanwhile: the record says the one it has now.
        core.kept.host_ports[i] = core.ports[port]->host_port();
      }
      core.lease.keep(native::encode_kept(core.kept));
    }
  }

  // The disk a create asks for: a new one, or a copy of a snapshot (opened
  // now: one that is not there fails before anything is made).
  native::DiskSource disk_for(const CreateOptions& options) const {
    native::DiskSource disk;
    if (options.snapshot) {
      disk.snapshot = snapshots_->open(options.tenant, *options.snapshot);
      struct stat st {};
      check_sys(::fstat(disk.snapshot.get(), &st), "reading the snapshot " + *options.snapshot);
      if (options.disk_mib && *options.disk_mib != (st.st_size >> 20)) {
        throw SandboxError(Reason::INVALID_INPUT, "a disk made from the snapshot " + *options.snapshot + " is " +
                                                      std::to_string(st.st_size >> 20) + " MiB, not the " +
                                                      std::to_string(*options.disk_mib) + " asked for");
      }
    } else if (options.disk_mib) {
      disk.mib = static_cast<std::uint64_t>(*options.disk_mib);
    }
    return disk;
  }

  // One sandbox, up to a running init: an id range, a record, a cgroup (in
  // `tenant`'s share of the cpu), a network namespace, the init and its
  // root; its workdir and /tmp on `disk` (none: tmpfs). `ahead`: for
  // the pool, at the lowest priority (launch_init), in no tenant until one
  // takes it.
  std::shared_ptr<native::SandboxCore> build(const SandboxImage& image, const Filters& filters,
                                             const std::stop_token& cancellation, const std::string& tenant,
                                             native::DiskSource disk, const std::vector<VolumeMount>& mounts = {},
                                             std::vector<native::HeldVolume> volumes = {}, bool writable_root = false,
                                             bool ahead = false) {
    StepTimer timer("build");
    check_host_memory();
    auto core = std::make_shared<native::SandboxCore>();
    const std::string name = random_hex(16);
    core->hostname = "mayura-" + name.substr(0, 8);
    core->workdir = image.workdir.empty() ? options_.workdir : image.workdir;
    core->commands_ahead = options_.commands_ahead;
    core->activity = activity_;
    core->snapshots = snapshots_;
    const bool on_disk = disk.mib > 0 || disk.snapshot;

    rootfs::RootOptions root;
    root.workdir = core->workdir;
    root.hostname = core->hostname;
    root.uid = image.uid.value_or(options_.uid);
    root.gid = image.gid.value_or(options_.gid);
    root.workdir_bytes = options_.workdir_mib << 20;
    root.workdir_on_disk = on_disk;
    root.root_on_disk = writable_root;
    for (const VolumeMount& v : mounts) root.volumes.push_back(v.path);
    root.tmp_bytes = options_.tmp_mib << 20;
    root.shm_bytes = options_.shm_mib << 20;
    root.inodes = options_.tmpfs_inodes;
    root.resolv_conf = netfilter::resolv_conf();
    protocol::Config config;
    config.plan = rootfs::plan_for(image.image, root);
    config.hostname = root.hostname;
    config.workdir = root.workdir;
    config.uid = root.uid;
    config.gid = root.gid;
    config.seccomp = filters;
    timer.step("plan");

    struct EndOnFailure {
      native::SandboxCore& core;
      bool armed = true;
      ~EndOnFailure() {
        if (armed) core.end();
      }
    } guard{*core};

    const std::string cgroup_path = places_.cgroups.root + "/" + name;
    // Every slot taken, some by sandboxes released and still being removed:
    // their release has returned, so their slots are the caller's to have.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      try {
        core->lease = places_.engine->claim(places_.cgroups, cgroup_path);
        break;
      } catch (const SandboxError& e) {
        const auto left = give_up - std::chrono::steady_clock::now();
        if (e.reason() != Reason::LIMIT_REACHED || left <= std::chrono::steady_clock::duration::zero() ||
            !cleaner_->wait_for_one(left))
          throw;
      }
    }
    const std::uint32_t id_base = options_.id_base + core->lease.slot() * 65536u;
    core->kept.name = name;
    core->kept.uid_base = id_base;
    timer.step("slot and record");
    // The init's cgroup.procs belongs to the sandbox's root, so the init can
    // place each command into a cgroup of its own.
    core->cgroup = cgroups::SandboxCgroup(places_.cgroups, name, id_base, id_base);
    // The engine's defaults, before anything runs in it: a sandbox made ahead
    // is then ready for a create that sets no limit of its own.
    core->cgroup.apply(default_limits_);
    // Before the init runs: building its root is most of a create's cpu.
    if (!ahead) core->tenancy = tenants_->join(tenant, core->cgroup);
    timer.step("cgroup");
    UniqueFd netns(netns_pool_.take());
    if (!netns) fail_step("making the sandbox's network namespace", errno);
    timer.step("network namespace");
    if (on_disk) {
      disk.uid = root.uid;
      disk.gid = root.gid;
      if (!disk.snapshot) core->disk = prepared_disks_.take({disk.mib, root.uid, root.gid});
      if (core->disk) {
        timer.step("disk made ahead taken");
      } else {
        if (!disk.snapshot) disk.made_like = disk_templates_.open(disk.mib << 20, root.uid, root.gid);
        core->disk = native::SandboxDisk(options_.disk_dir, name, std::move(disk));
        timer.step("disk");
      }
    }
    const cgroups::SandboxCgroup& cgroup = core->cgroup;
    // The disk's two, then each volume's, in the plan's order.
    std::vector<UniqueFd> handed = core->disk ? core->disk.take_mounts(writable_root) : std::vector<UniqueFd>{};
    for (native::HeldVolume& v : volumes) handed.push_back(std::move(v.mount));
    core->volumes = std::move(volumes);
    core->init = launch_init(
        zygote_, netns.get(), cgroup.fd(), id_base, config, std::move(handed),
        [&cgroup](pid_t pid) { cgroup.place_init(pid); }, ahead, cancellation);
    core->netns = std::move(netns);
    timer.step("init ready");
    core->cgroup.settle();
    timer.step("cgroup settled");
    if (ahead && core->commands_ahead) {
      first_command_ahead(*core, cancellation);
      timer.step("first command's process made");
    }
    activity_->built();
    guard.armed = false;
    return core;
  }

  // The first command's cgroup and its process, made while the sandbox
  // waits in the pool: a create that takes it runs its first command as any
  // later one, with no cgroup to make, no v1 move and no filter to attach.
  // The process is cloned at the pool's priority, so its start is waited
  // for: the create that gives it the ordinary one back must find it in its
  // cgroup (see create). If the init cannot clone it, the first command
  // starts the usual way; if the init does not answer, the build fails (a
  // process could still come, and be missed).
  static void first_command_ahead(native::SandboxCore& core, const std::stop_token& cancellation) {
    try {
      core.cgroup.make_command(kFirstCommand);
    } catch (const SandboxError&) {
      return;  // the first command makes its own
    }
    std::exception_ptr failed;
    core.cgroup.retire_command(kFirstCommand, true, [&](int dir) {
      try {
        core.start_standby_now(dir, kSetupTimeoutMs, cancellation);
      } catch (...) {
        failed = std::current_exception();
      }
    });
    if (failed) std::rethrow_exception(failed);
  }

  // Each of its devices (its disk's, its volumes') bounded on its own.
  static void bound_io(native::SandboxCore& core, const DiskIo& io) {
    const auto count = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    core.io_bounds = {count(io.read_bps), count(io.write_bps), count(io.read_iops), count(io.write_iops)};
    if (core.disk) core.io_devices.push_back(core.disk.device_number());
    for (const native::HeldVolume& v : core.volumes) core.io_devices.push_back(v.device);
    core.bound_io(true);
  }

  // The create's limits, or the engine's defaults where it sets none (and
  // the host can enforce them).
  cgroups::Limits limits_for(const CreateOptions& options) const {
    // The limits layer checks these too; a caller of the provider itself
    // gets the same answers.
    check_resources(options.cpus, options.memory_mib, options.pids);
    cgroups::Limits limits;
    const double cpus = options.cpus.value_or(options_.default_cpus);
    if (cpus > 0) limits.cpus = cpus;
    const std::int64_t memory = options.memory_mib.value_or(options_.default_memory_mib);
    if (memory > 0) limits.memory_bytes = static_cast<std::uint64_t>(memory) << 20;
    const std::int64_t pids = options.pids.value_or(options_.default_pids);
    if (pids > 0) limits.pids = static_cast<std::uint64_t>(pids);
    return limits;
  }

  // The built-in profile; or the caller's, over the baseline that no
  // profile may reopen.
  Filters seccomp_for(const CreateOptions& options) const {
    if (!options.seccomp_profile) return default_seccomp_;
    try {
      return {seccomp::baseline_program(), seccomp::compile_oci(*options.seccomp_profile)};
    } catch (const seccomp::ProfileError& e) {
      throw SandboxError(Reason::INVALID_INPUT, std::string("the seccomp profile is not usable: ") + e.what());
    }
  }

  // The engine's variables, then the image's Env, then the create's: each
  // wins over the one before.
  std::map<std::string, std::string> base_env(const CreateOptions& options, const SandboxImage& image,
                                              const std::string& hostname, const std::string& workdir) const {
    const std::string user =
        image.uid ? (image.user_name.empty() ? std::to_string(*image.uid) : image.user_name) : std::string("sandbox");
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        {"HOME", workdir},
        {"USER", user},
        {"LOGNAME", user},
        {"SHELL", "/bin/sh"},
        {"LANG", "C.UTF-8"},
        {"HOSTNAME", hostname},
    };
    for (const auto& [k, v] : image.env) env[k] = v;
    for (const auto& [k, v] : options.env) env[k] = v;
    return env;
  }

  // First, so it goes last, after every sandbox: the engine's own places
  // are removed when nothing of any engine is left in them.
  struct Places {
    cgroups::Places cgroups;
    std::string state_dir;
    std::unique_ptr<records::EngineLock> engine;  // what this engine's records name
    ~Places() {
      if (engine) engine->release();
      cgroups::remove_root_if_unused(cgroups);
      if (!state_dir.empty()) records::remove_state_if_unused(state_dir);
    }
  } places_;
  NativeOptions options_;
  Filters default_seccomp_;
  cgroups::Limits default_limits_;  // what a create that sets none gets
  UniqueFd desktop_memfd_;          // the desktop helper's, for every sandbox with a desktop
  netfilter::NetnsPool netns_pool_{options_.netns_pool};
  // The engine's network services (published ports, the allowlists' DNS and
  // proxies, network all's DNS); outlive every sandbox. The way out (Egress)
  // starts with the first network that needs it, and a host table a dead
  // engine left is removed before the first link of network all.
  // Who may connect to each published port: outlives every port.
  netfilter::PortOwners port_owners_{options_.id_base};
  netfilter::IoThread io_;
  netfilter::NetworkContext network_{
      io_.context(), egress_options(options_),
      netfilter::HostLinkOptions{options_.all_network_pool, options_.state_dir + "/" + records::kNetworkLock}};
  Zygote zygote_;
  // Before the reaper: a sandbox the reaper ends at the provider's end may be
  // one a release left here to finish.
  std::shared_ptr<native::Cleaner> cleaner_ = std::make_shared<native::Cleaner>();
  native::LifetimeReaper reaper_{*runtime()};
  // How the cpu is shared among tenants (held by every sandbox in one, as
  // a sandbox may outlive its provider).
  std::shared_ptr<native::TenantShares> tenants_ = std::make_shared<native::TenantShares>();
  // When callers last called; every sandbox marks its calls here.
  std::shared_ptr<native::Activity> activity_ = std::make_shared<native::Activity>();
  std::shared_ptr<const native::SnapshotStore> snapshots_ =
      std::make_shared<const native::SnapshotStore>(options_.snapshot_dir);
  native::VolumeStore volumes_{options_.volume_dir, options_.uid, options_.gid};
  native::DiskTemplates disk_templates_{options_.disk_dir};
  // Its disks are made from the templates: it waits for one being made
  // before they go.
  native::PreparedDisks prepared_disks_{options_.prepared_disks,
                                        [this](const native::PreparedDisks::Kind& kind) {
                                          native::DiskSource source;
                                          source.mib = kind.mib;
                                          source.uid = kind.uid;
                                          source.gid = kind.gid;
                                          source.made_like = disk_templates_.open(kind.mib << 20, kind.uid, kind.gid);
                                          return native::SandboxDisk(options_.disk_dir, random_hex(16),
                                                                     std::move(source));
                                        },
                                        activity_, *runtime()};
  // Sandboxes taken back as the engine started, until restore() hands them out.
  std::mutex restored_mutex_;
  std::vector<Restored> restored_;
  // Last: its thread uses everything above, and stops first.
  native::PreparedPool prepared_{options_.prepared,
                                 [this](const std::stop_token& stop) {
                                   SandboxImage host;
                                   host.image = rootfs::Image{"host", "/", true, {}};
                                   return build(host, default_seccomp_, stop, "", {}, {}, {}, false, true);
                                 },
                                 *activity_};
};

}  // namespace

std::string describe_native_host(const NativeOptions& options) {
  const cgroups::Host host = cgroups::detect_host();
  return host.describe() + "\n" + cgroups::plan_placement_here(host.v2_or_engines(), options.cgroup_root).how;
}

std::shared_ptr<SandboxProvider> native_sandboxes(const NativeOptions& options) {
  return std::make_shared<NativeProvider>(options);
}

}  // namespace mayura
