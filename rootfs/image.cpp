// Images and the plan that turns one into a sandbox's root.

#include "mayura/rootfs/image.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

namespace mayura::rootfs {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool lexists(const std::string& path, struct stat* st) { return ::lstat(path.c_str(), st) == 0; }

std::string read_link(const std::string& path) {
  std::array<char, 4096> buf{};
  const ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
  return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string();
}

Op bind(const std::string& src, const std::string& dst, std::uint32_t flags = 0) {
  Op op;
  op.kind = OpKind::bind;
  op.src = src;
  op.dst = dst;
  op.flags = flags;
  return op;
}

// The directory `dir` of a disk the engine hands over, on `dst`.
Op handed(const std::string& dir, const std::string& dst) {
  Op op;
  op.kind = OpKind::handed;
  op.src = dir;
  op.dst = dst;
  return op;
}

Op simple(OpKind kind, const std::string& dst, std::string data = {}, std::uint32_t mode = 0755,
          std::uint32_t flags = 0) {
  Op op;
  op.kind = kind;
  op.dst = dst;
  op.data = std::move(data);
  op.mode = mode;
  op.flags = flags;
  return op;
}

Op tmpfs(const std::string& dst, std::uint64_t size, std::uint64_t inodes, std::uint32_t mode, std::uint32_t uid,
         std::uint32_t gid, std::uint32_t flags = 0) {
  Op op = simple(OpKind::tmpfs, dst, {}, mode, flags);
  op.size = size;
  op.inodes = inodes;
  op.uid = uid;
  op.gid = gid;
  return op;
}

// One top-level entry of an image: a directory or file bound read-only, or a
// symlink made again with the same target.
void add_entry(Plan& plan, const std::string& host_path, const std::string& dst) {
  struct stat st {};
  if (!lexists(host_path, &st)) return;
  if (S_ISLNK(st.st_mode)) {
    const std::string target = read_link(host_path);
    if (!target.empty()) plan.push_back(simple(OpKind::symlink, dst, target));
  } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
    plan.push_back(bind(host_path, dst));
  }
}

constexpr std::array kProcMasks = {
    "kcore",         "keys",       "key-users",   "kallsyms",   "timer_list",   "timer_stats", "sched_debug",
    "latency_stats", "interrupts", "kmsg",        "kpagecount", "kpageflags",   "kpagecgroup", "sysrq-trigger",
    "acpi",          "asound",     "scsi",        "firmware",   "driver",       "dma",         "iomem",
    "ioports",       "modules",    "vmallocinfo", "slabinfo",   "pagetypeinfo", "buddyinfo",   "zoneinfo",
    "mtrr",          "config.gz",  "lockdep",     "lock_stat",
};
constexpr std::array kProcReadOnly = {"sys", "bus", "fs", "irq", "tty", "sysvipc"};

// What every sandbox gets, whatever its image: the writable places, a
// minimal /dev, its own /proc.
void add_common(Plan& plan, const RootOptions& o) {
  if (o.workdir_on_disk) {
    // Both on the engine's disk, in its quota: a snapshot holds both.
    plan.push_back(handed(kDiskWorkspace, o.workdir));
    plan.push_back(handed(kDiskTmp, "/tmp"));
  } else {
    plan.push_back(tmpfs(o.workdir, o.workdir_bytes, o.inodes, 0755, o.uid, o.gid, kKeepContents));
    plan.push_back(tmpfs("/tmp", o.tmp_bytes, o.inodes, 01777, 0, 0));
  }

  // A directory of the root's tmpfs, read-only with it: one file system
  // fewer per sandbox (the kernel's shrinker tables grow with every one, see
  // mount_tree.cpp), and nothing in /dev is written but through its nodes,
  // the pty's and shm's own mounts.
  plan.push_back(simple(OpKind::mkdir, "/dev"));
  // Read-only binds: a device is written through its node whatever the
  // mount says, and no mount that can be written may carry devices.
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    plan.push_back(bind(std::string("/dev/") + node, std::string("/dev/") + node, kAllowDevices | kNoExec));
  }
  plan.push_back(simple(OpKind::devpts, "/dev/pts"));
  plan.push_back(simple(OpKind::symlink, "/dev/ptmx", "pts/ptmx"));
  plan.push_back(tmpfs("/dev/shm", o.shm_bytes, o.inodes, 01777, 0, 0));
  plan.push_back(simple(OpKind::symlink, "/dev/fd", "/proc/self/fd"));
  plan.push_back(simple(OpKind::symlink, "/dev/stdin", "/proc/self/fd/0"));
  plan.push_back(simple(OpKind::symlink, "/dev/stdout", "/proc/self/fd/1"));
  plan.push_back(simple(OpKind::symlink, "/dev/stderr", "/proc/self/fd/2"));
  plan.push_back(simple(OpKind::proc, "/proc"));
  // The kernel's own files, as Docker hides them: what leaks host memory,
  // keys, timers and hardware is masked; what could change the kernel is
  // read-only.
  for (const char* hidden : kProcMasks) {
    plan.push_back(simple(OpKind::mask, std::string("/proc/") + hidden, {}, 0, kOptional));
  }
  for (const char* fixed : kProcReadOnly) {
    plan.push_back(simple(OpKind::read_only, std::string("/proc/") + fixed, {}, 0, kOptional));
  }
}

// The image entry a workdir replaces: "/workspace" -> "workspace"; a deeper
// one ("/usr/src/app") replaces none, its tmpfs goes over the image's directory.
std::string top_level_of(const std::string& path) {
  const std::string rest =
      path.substr(path.find_first_not_of('/') == std::string::npos ? path.size() : path.find_first_not_of('/'));
  return rest.find('/') == std::string::npos ? rest : std::string();
}

std::string passwd_for(const RootOptions& o) {
  return "root:x:0:0:root:/root:/bin/sh\n"
         "sandbox:x:" +
         std::to_string(o.uid) + ":" + std::to_string(o.gid) + ":sandbox:" + o.workdir +
         ":/bin/sh\n"
         "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string group_for(const RootOptions& o) {
  return "root:x:0:\ntty:x:5:\nsandbox:x:" + std::to_string(o.gid) + ":\nnogroup:x:65534:\n";
}

std::string hosts_for(const RootOptions& o) {
  return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + o.hostname + "\n";
}

// Files under the host's /etc that hold secrets or host identity. Whatever is
// not listed is protected by its own permissions: the sandbox user is no host
// user and in no host group, so it reads only what every host user may read.
constexpr std::array kHostEtcMasks = {
    "shadow",      "shadow-",     "gshadow",
    "gshadow-",    "sudoers",     "sudoers.d",
    "ssh",         "ssl/private", "security/opasswd",
    "machine-id",  "credstore",   "credstore.encrypted",
    "subuid",      "subgid",      "subuid-",
    "subgid-",     "passwd-",     "group-",
    "krb5.keytab", "wireguard",   "NetworkManager/system-connections",
    "letsencrypt", "docker",      "containerd",
    "kubernetes",  "mayura",
};

}  // namespace

Image resolve_image(const std::string& image, const std::string& image_dir) {
  if (image.empty() || image == "host") return Image{"host", "/", true, {}};
  if (image.front() == '/') {
    // The host's whole root is never an image: `host` is its safe form.
    if (image.find_first_not_of('/') == std::string::npos)
      throw ImageError("image / is the host itself; use host", ImageError::Kind::bad_input);
    if (!is_dir(image)) throw ImageError("image directory " + image + " does not exist", ImageError::Kind::not_found);
    if (!is_dir(image + "/bin") && !is_dir(image + "/usr")) {
      throw ImageError("image directory " + image + " holds no root file system (no bin or usr)",
                       ImageError::Kind::bad_input);
    }
    return Image{image, image, false, {}};
  }
  const bool name_ok =
      image.size() <= 255 && image.find("..") == std::string::npos &&
      std::all_of(image.begin(), image.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == ':';
      });
  if (!name_ok) throw ImageError("image name '" + image.substr(0, 64) + "' is malformed", ImageError::Kind::bad_input);
  for (const std::string& candidate : {image_dir + "/" + image + "/rootfs", image_dir + "/" + image}) {
    if (is_dir(candidate) && (is_dir(candidate + "/bin") || is_dir(candidate + "/usr"))) {
      return Image{image, candidate, false, {}};
    }
  }
  throw ImageError("image '" + image + "' is not in " + image_dir, ImageError::Kind::not_found);
}

Plan plan_for(const Image& image, const RootOptions& o) {
  // Only a stored image's layers take an upper layer: the host's and a
  // directory image's files belong to no user of the sandbox.
  if (o.root_on_disk && (image.host || image.layers.empty()))
    throw ImageError("a writable root needs an image from the image store, not " + image.name,
                     ImageError::Kind::bad_input);
  if (o.root_on_disk && !o.workdir_on_disk)
    throw ImageError("a writable root lives on the sandbox's disk, and it has none", ImageError::Kind::bad_input);
  Plan plan;
  if (image.host) {
    plan.push_back(bind("/usr", "/usr"));
    for (const char* dir : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"}) {
      add_entry(plan, std::string("/") + dir, std::string("/") + dir);
    }
    plan.push_back(bind("/etc", "/etc"));
    plan.push_back(simple(OpKind::override_file, "/etc/passwd", passwd_for(o), 0644, kOptional));
    plan.push_back(simple(OpKind::override_file, "/etc/group", group_for(o), 0644, kOptional));
    for (const char* secret : kHostEtcMasks) {
      plan.push_back(simple(OpKind::mask, std::string("/etc/") + secret, {}, 0, kOptional));
    }
  } else if (!image.layers.empty()) {
    Op layers = simple(OpKind::image_layers, "/");
    for (const auto& dir : image.layers) layers.data += dir + "\n";
    // The workdir is kept: an image's WorkingDir holds its app, which stays
    // visible under the writable tmpfs.
    layers.src = "dev/proc/sys/tmp";
    if (o.root_on_disk) layers.flags |= kWritable;
    plan.push_back(layers);
  } else {
    const std::string workdir_name = top_level_of(o.workdir);
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(image.root.c_str()), ::closedir);
    if (!dir) throw ImageError("image directory " + image.root + " cannot be read", ImageError::Kind::store);
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(dir.get())) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name.rfind(".mayura", 0) == 0 || name == "dev" || name == "proc" ||
          name == "sys" || name == "tmp" || name == "run" || name == workdir_name) {
        continue;
      }
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) add_entry(plan, image.root + "/" + name, "/" + name);
  }
  plan.push_back(simple(OpKind::override_file, "/etc/hostname", o.hostname + "\n", 0644, kOptional));
  plan.push_back(simple(OpKind::override_file, "/etc/hosts", hosts_for(o), 0644, kOptional));
  plan.push_back(simple(OpKind::override_file, "/etc/resolv.conf", o.resolv_conf, 0644, kOptional));
  add_common(plan, o);
  // Last: a volume may go under the workdir or /tmp.
  for (const std::string& path : o.volumes) plan.push_back(handed(kVolumeData, path));
  return plan;
}

}  // namespace mayura::rootfs
