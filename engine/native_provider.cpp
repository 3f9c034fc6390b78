// The native provider: checks a create's input, then builds the sandbox in
// order: an id range, a record, a cgroup, the init (namespaces, root,
// privileges), and a deadline.

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <random>

#include "cgroups.hpp"
#include "init_image.hpp"
#include "lifetimes.hpp"
#include "mayura/native.hpp"
#include "mayura/netfilter/netns_pool.hpp"
#include "mayura/rootfs/image.hpp"
#include "native_sandbox.hpp"
#include "prepared.hpp"
#include "records.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura {
namespace {

std::string random_hex(int digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s;
  std::uint64_t v = rng();
  for (int i = 0; i < digits; ++i, v >>= 4) s.push_back(hex[v & 0xf]);
  return s;
}

void check_options(const NativeOptions& o) {
  auto invalid = [](const std::string& m) { throw SandboxError(Reason::INVALID_CONFIG, m); };
  if (o.workdir.size() < 2 || o.workdir.front() != '/' || o.workdir.find('/', 1) != std::string::npos ||
      o.workdir == "/proc" || o.workdir == "/dev" || o.workdir == "/tmp" || o.workdir.find("..") != std::string::npos) {
    invalid("workdir must be one directory below / (like /workspace)");
  }
  if (o.uid == 0 || o.gid == 0 || o.uid >= 65536 || o.gid >= 65536) invalid("the sandbox user must be a non-root id below 65536");
  if (o.id_slots == 0 || static_cast<std::uint64_t>(o.id_base) + static_cast<std::uint64_t>(o.id_slots) * 65536 > 0xFFFFFFFEull ||
      o.id_base < 65536) {
    invalid("id_base and id_slots must give ranges above host id 65535 and below 2^32-1");
  }
  if (o.workdir_mib == 0 || o.tmp_mib == 0 || o.shm_mib == 0 || o.tmpfs_inodes == 0) invalid("tmpfs sizes must be positive");
  if (o.state_dir.empty() || o.state_dir.front() != '/') invalid("state_dir must be an absolute path");
}

class NativeProvider final : public SandboxProvider {
 public:
  explicit NativeProvider(const NativeOptions& options) : options_(options) {
    check_options(options_);
    if (::geteuid() != 0) throw SandboxError(Reason::UNSUPPORTED, "the native provider needs root");
    places_.cgroup_root = cgroups::prepare_root(options_.cgroup_root);
    places_.state_dir = options_.state_dir;
    records::clean_orphans(options_.state_dir, places_.cgroup_root);
    init_memfd_ = make_init_memfd();
    zygote_.use_program(init_memfd_.get());
    prepared_.start();
  }

  std::string id() const override { return "native"; }

  Features features() const override {
    Features f;
    f.stdin = true;
    f.network = {NetworkKind::none};
    return f;
  }

  std::string workdir() const override { return options_.workdir; }
  std::int64_t max_lifetime_ms() const override { return options_.max_lifetime_ms; }

  std::unique_ptr<SandboxBackend> create(const CreateOptions& options, std::stop_token cancellation) override {
    StepTimer timer("create");
    // Everything that can be wrong with the input is found before anything is made.
    if (options.network.kind != NetworkKind::none) {
      throw SandboxError(Reason::INVALID_INPUT, "the native provider supports only network none for now");
    }
    if (options.cpus || options.memory_mib) {
      throw SandboxError(Reason::INVALID_INPUT, "cpus and memory_mib are not enforced yet, so they are refused");
    }
    if (!options.ports.empty()) throw SandboxError(Reason::INVALID_INPUT, "ports are not served yet");
    rootfs::Image image;
    try {
      image = rootfs::resolve_image(options.image, options_.image_dir);
    } catch (const rootfs::ImageError& e) {
      throw SandboxError(Reason::INVALID_CONFIG, e.what());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.lifetime_ms);

    std::shared_ptr<native::SandboxCore> core;
    if (image.host) core = prepared_.take();
    timer.step(core ? "prepared sandbox taken" : "no prepared sandbox");
    if (!core) core = build(image, cancellation);
    // What is this create's own: its env and its lifetime.
    core->base_env = base_env(options, core->hostname);
    reaper_.watch(deadline, core);
    timer.step("ready");
    return std::make_unique<native::NativeSandbox>(core);
  }

 private:
  // One sandbox, up to a running init: an id range, a record, a cgroup, a
  // network namespace, the init and its root.
  std::shared_ptr<native::SandboxCore> build(const rootfs::Image& image, std::stop_token cancellation) {
    StepTimer timer("build");
    auto core = std::make_shared<native::SandboxCore>();
    const std::string name = random_hex(16);
    core->hostname = "mayura-" + name.substr(0, 8);
    core->workdir = options_.workdir;

    rootfs::RootOptions root;
    root.workdir = options_.workdir;
    root.hostname = core->hostname;
    root.uid = options_.uid;
    root.gid = options_.gid;
    root.workdir_bytes = options_.workdir_mib << 20;
    root.tmp_bytes = options_.tmp_mib << 20;
    root.shm_bytes = options_.shm_mib << 20;
    root.inodes = options_.tmpfs_inodes;
    protocol::Config config;
    config.plan = rootfs::plan_for(image, root);
    config.hostname = root.hostname;
    config.workdir = root.workdir;
    config.uid = root.uid;
    config.gid = root.gid;
    timer.step("plan");

    struct EndOnFailure {
      native::SandboxCore& core;
      bool armed = true;
      ~EndOnFailure() {
        if (armed) core.end();
      }
    } guard{*core};

    core->lease = records::SlotLease::acquire(options_.state_dir, places_.cgroup_root, options_.id_slots);
    const std::uint32_t id_base = options_.id_base + core->lease.slot() * 65536u;
    const std::string cgroup_path = places_.cgroup_root + "/" + name;
    core->lease.record(cgroup_path);
    timer.step("slot and record");
    // The init's cgroup.procs belongs to the sandbox's root, so the init can
    // place each command into a cgroup of its own.
    core->cgroup = cgroups::SandboxCgroup(places_.cgroup_root, name, id_base, id_base);
    timer.step("cgroup");
    UniqueFd netns(netns_pool_.take());
    if (!netns) fail_step("making the sandbox's network namespace", errno);
    timer.step("network namespace");
    core->init = launch_init(zygote_, netns.get(), core->cgroup.fd(), id_base, config, cancellation);
    timer.step("init ready");
    guard.armed = false;
    return core;
  }

  std::map<std::string, std::string> base_env(const CreateOptions& options, const std::string& hostname) const {
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        {"HOME", options_.workdir},
        {"USER", "sandbox"},
        {"LOGNAME", "sandbox"},
        {"SHELL", "/bin/sh"},
        {"LANG", "C.UTF-8"},
        {"HOSTNAME", hostname},
    };
    for (const auto& [k, v] : options.env) env[k] = v;
    return env;
  }

  // First, so it goes last, after every sandbox: the engine's own places
  // are removed when nothing of any engine is left in them.
  struct Places {
    std::string cgroup_root;
    std::string state_dir;
    ~Places() {
      if (!cgroup_root.empty()) cgroups::remove_root_if_unused(cgroup_root);
      if (!state_dir.empty()) records::remove_state_if_unused(state_dir);
    }
  } places_;
  NativeOptions options_;
  UniqueFd init_memfd_;
  netfilter::NetnsPool netns_pool_{options_.netns_pool};
  Zygote zygote_;
  native::LifetimeReaper reaper_;
  // Last: its thread uses everything above, and stops first.
  native::PreparedPool prepared_{options_.prepared, [this] {
    return build(rootfs::Image{"host", "/", true}, std::stop_token{});
  }};
};

}  // namespace

std::shared_ptr<SandboxProvider> native_sandboxes(const NativeOptions& options) {
  return std::make_shared<NativeProvider>(options);
}

}  // namespace mayura
