// What goes in the test images: a BusyBox root file system with every
// layer feature an importer must get right, and big incompressible layers.

#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "image_archives.hpp"

namespace mayura::testing::images {
namespace {

constexpr const char* kBusybox = "/bin/busybox";
constexpr unsigned kApp = 1234;

// Follows symlinks, so a library reached through /lib64 -> /lib/... is
// stored as the file it is.
std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("image fixture: cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The absolute paths of the libraries `program` loads, from ldd's lines
// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and
// "/lib64/ld-linux-x86-64.so.2 (0x...)"; none for a static program. Asking
// ldd keeps the image runnable on whatever the host's loader and libc are.
std::vector<std::string> libraries_of(const std::string& program) {
  std::unique_ptr<FILE, int (*)(FILE*)> ldd(popen(("ldd '" + program + "' 2>&1").c_str(), "r"), pclose);
  if (!ldd) throw std::runtime_error("image fixture: cannot run ldd");
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, ldd.get())) > 0;) out.append(buffer, n);
  const int status = pclose(ldd.release());
  // A program without its libraries would fail only later, inside a
  // sandbox, with a far less telling error.
  if (status != 0 && out.find("not a dynamic executable") == std::string::npos &&
      out.find("statically linked") == std::string::npos) {
    throw std::runtime_error("image fixture: ldd " + program + " failed: " + out);
  }
  std::vector<std::string> libraries;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" (0x") == std::string::npos) continue;  // only loaded objects have an address
    const std::size_t arrow = line.find("=> ");
    const std::size_t start = line.find('/', arrow == std::string::npos ? 0 : arrow);
    if (start == std::string::npos) continue;  // linux-vdso.so.1, which the kernel provides
    libraries.push_back(line.substr(start, line.find(' ', start) - start));
  }
  return libraries;
}

// Directory entries for every parent of `path` not made yet, outermost
// first, so the tar never holds a file before its directory.
void add_parents(std::vector<Entry>& layer, std::set<std::string>& made, const std::string& path) {
  for (std::size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string parent = path.substr(0, slash);
    if (made.insert(parent).second) layer.push_back(dir(parent));
  }
}

constexpr const char* kApplets[] = {"sh", "ls",    "cat",  "echo", "id", "sleep", "env",   "pwd",  "stat",    "touch",
                                    "rm", "mkdir", "grep", "head", "wc", "true",  "false", "test", "readlink"};

std::vector<Entry> base_layer() {
  std::vector<Entry> layer;
  std::set<std::string> made;
  const auto mkdir = [&](const std::string& path, unsigned mode = 0755, unsigned uid = 0, unsigned gid = 0) {
    made.insert(path);
    layer.push_back(dir(path, mode, uid, gid));
  };
  for (const char* d : {"bin", "dev", "etc", "home"}) mkdir(d);
  mkdir("home/app", 0755, kApp, kApp);
  for (const char* d : {"opt", "opt/gone", "opt/opaque"}) mkdir(d);
  mkdir("proc", 0555);
  mkdir("root", 0700);
  for (const char* d : {"run", "sbin", "srv"}) mkdir(d);
  mkdir("sys", 0555);
  mkdir("tmp", 01777);
  for (const char* d : {"usr", "usr/bin", "usr/sbin", "var"}) mkdir(d);
  mkdir("var/tmp", 01777);

  layer.push_back(file("bin/busybox", read_host_file(kBusybox), 0755));
  for (const char* applet : kApplets) layer.push_back(images::symlink(std::string("bin/") + applet, "busybox"));
  for (const std::string& library : libraries_of(kBusybox)) {
    const std::string path = library.substr(1);
    add_parents(layer, made, path);
    layer.push_back(file(path, read_host_file(library), 0755));
  }

  layer.push_back(file("etc/passwd",
                       "root:x:0:0:root:/root:/bin/sh\n"
                       "app:x:1234:1234:app:/home/app:/bin/sh\n"
                       "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"));
  layer.push_back(file("etc/group", "root:x:0:\napp:x:1234:\nnogroup:x:65534:\n"));
  layer.push_back(file("etc/removed.txt", "removed by layer 2\n"));
  layer.push_back(file("opt/gone/file", "whited out by layer 2\n"));
  layer.push_back(file("opt/opaque/old1", "hidden by layer 2's opaque marker\n"));
  layer.push_back(file("opt/opaque/old2", "hidden by layer 2's opaque marker\n"));
  layer.push_back(file("home/app/secret", "app's secret\n", 0600, kApp, kApp));
  return layer;
}

std::vector<Entry> changes_layer() {
  const std::string script = "#!/bin/sh\nid\n";
  // Parents come again, as in a layer Docker commits: the directories a
  // change is in are part of the diff.
  return {
      dir("dev"),
      char_device("dev/evil-null", 1, 3),
      block_device("dev/evil-sda", 8, 0),
      dir("etc"),
      whiteout("etc", "removed.txt"),
      dir("opt"),
      whiteout("opt", "gone"),
      dir("opt/opaque"),
      opaque("opt/opaque"),
      file("opt/opaque/new", "new in layer 2\n"),
      dir("srv"),
      file("srv/owned", "owned by app\n", 0640, kApp, kApp),
      file("srv/a", "one file, two names\n"),
      hardlink("srv/a-link", "srv/a"),
      dir("usr"),
      dir("usr/bin"),
      file("usr/bin/suid", script, 04755),
      file("usr/bin/sgid", script, 02755),
  };
}

std::vector<Entry> app_layer() {
  return {
      dir("app"),
      file("app/hello.txt", "hello from the image\n"),
      file("app/run.sh", "#!/bin/sh\necho \"run.sh in $(pwd) as $(id -u): $GREETING\"\n", 0755),
  };
}

}  // namespace

std::vector<Entry> host_files_layer(const std::vector<std::pair<std::string, std::string>>& programs,
                                    const std::vector<std::string>& trees) {
  std::vector<Entry> layer;
  std::set<std::string> made;
  std::set<std::string> libraries;
  for (const auto& [host, in_image] : programs) {
    const std::string path = in_image.substr(in_image.find_first_not_of('/'));
    add_parents(layer, made, path);
    layer.push_back(file(path, read_host_file(host), 0755));
    for (const std::string& library : libraries_of(host)) libraries.insert(library);
  }
  for (const std::string& library : libraries) {
    const std::string path = library.substr(1);
    add_parents(layer, made, path);
    layer.push_back(file(path, read_host_file(library), 0755));
  }
  for (const std::string& tree : trees) {
    const std::string top = tree.substr(1);
    add_parents(layer, made, top + "/");
    for (const auto& e : std::filesystem::recursive_directory_iterator(tree)) {
      const std::string path = e.path().string().substr(1);
      const auto mode = static_cast<unsigned>(e.symlink_status().permissions()) & 07777;
      if (e.is_symlink()) {
        layer.push_back(images::symlink(path, std::filesystem::read_symlink(e.path()).string()));
      } else if (e.is_directory()) {
        if (made.insert(path).second) layer.push_back(dir(path, mode));
      } else if (e.is_regular_file()) {
        layer.push_back(file(path, read_host_file(e.path().string()), mode));
      }
    }
  }
  return layer;
}

std::vector<std::vector<Entry>> busybox_layers() { return {base_layer(), changes_layer(), app_layer()}; }

ImageSpec busybox_spec(Compression compression) {
  ImageSpec spec;
  spec.layers = busybox_layers();
  spec.compression = compression;
  spec.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GREETING=from-image", "SHARED=image"};
  spec.working_dir = "/app";
  spec.user = "app";
  spec.cmd = {"/bin/sh"};
  spec.architecture = host_architecture();
  return spec;
}

std::vector<Entry> big_layer(std::size_t bytes, std::uint64_t seed) {
  constexpr std::size_t kFile = std::size_t{4} << 20;
  std::mt19937_64 random(seed);
  std::vector<Entry> layer{dir("data")};
  for (std::size_t done = 0, n = 0; done < bytes; ++n) {
    std::string data(std::min(kFile, bytes - done), '\0');
    for (std::size_t i = 0; i < data.size(); i += 8) {
      const std::uint64_t r = random();
      for (std::size_t j = 0; j < 8 && i + j < data.size(); ++j) data[i + j] = static_cast<char>(r >> (8 * j));
    }
    char name[32];
    std::snprintf(name, sizeof name, "data/blob-%04zu", n);
    done += data.size();
    layer.push_back(file(name, std::move(data)));
  }
  return layer;
}

std::string host_architecture() {
  utsname u{};
  if (uname(&u) != 0) throw std::runtime_error("image fixture: uname failed");
  std::string machine = u.machine;
  // The GOARCH names images use; ppc64le, s390x and riscv64 are the same.
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  if (machine == "i686" || machine == "i386") return "386";
  if (machine.rfind("armv", 0) == 0) return "arm";
  return machine;
}

}  // namespace mayura::testing::images
