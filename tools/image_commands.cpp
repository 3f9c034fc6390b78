#include "run_engine.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mayura/errors.hpp"
#include "mayura/images.hpp"
#include "mayura/native.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::tools {
namespace {

constexpr int kFailed = 125;

const char* kImageUsage = R"(usage: mayura-run image COMMAND

  import FILE [NAME[:TAG]]  import a `docker save` archive or an OCI image
                            layout archive (tar, gzip or zstd layers); without
                            NAME, under the names the archive gives; FILE -
                            reads standard input (docker save IMAGE | ...)
  list                      the images in the store
  inspect NAME[:TAG]|ID     one image, as JSON
  rm NAME[:TAG]|ID          remove a name; the image and its layers go when
                            no other name or running sandbox needs them

The store is MAYURA_IMAGE_STORE (default /var/lib/mayura/store). Run an
imported image with: mayura-run --image NAME[:TAG] -- COMMAND
)";

std::string store_dir() {
  const char* v = std::getenv("MAYURA_IMAGE_STORE");
  return v && *v ? v : NativeOptions{}.image_store;
}

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string short_id(const std::string& id) { return id.size() > 19 ? id.substr(7, 12) : id; }

// Standard input spooled to an unnamed file in the store's tmp (an archive
// is read more than once): nothing is left whatever ends the import.
class Spool {
 public:
  explicit Spool(const std::string& store) {
    if (::isatty(STDIN_FILENO) == 1)
      throw SandboxError(Reason::INVALID_INPUT, "import - reads an archive from a pipe, not a terminal");
    const std::string tmp = store + "/tmp";
    std::error_code ec;
    std::filesystem::create_directories(tmp, ec);
    ::chmod(store.c_str(), 0700);
    fd_ = UniqueFd(::open(tmp.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!fd_)
      throw SandboxError(Reason::INTERNAL, "cannot spool standard input in " + tmp + ": " + std::strerror(errno));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw SandboxError(Reason::INVALID_INPUT, std::string("reading standard input: ") + std::strerror(errno));
      if (n == 0) break;
      if (write_all(fd_.get(), buf, static_cast<std::size_t>(n)) != 0) {
        throw SandboxError(Reason::INTERNAL, "cannot spool standard input in " + tmp + ": " + std::strerror(errno));
      }
    }
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_.get()); }

 private:
  UniqueFd fd_;
};

int import_image(std::vector<std::string> args) {
  if (args.empty() || args.size() > 2) {
    std::fputs(kImageUsage, stderr);
    return kFailed;
  }
  ImageStore store(store_dir());
  std::optional<Spool> spool;
  const std::string shown = args[0] == "-" ? std::string("standard input") : args[0];
  if (args[0] == "-") {
    spool.emplace(store_dir());
    args[0] = spool->path();
  }
  // Progress on a terminal only: a log or a pipe gets the result alone.
  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  auto last = std::chrono::steady_clock::time_point{};
  const auto started = std::chrono::steady_clock::now();
  auto progress = [&](const ImageImportProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(100)) return;
    last = now;
    const double pct =
        p.bytes_total ? 100.0 * static_cast<double>(p.bytes_read) / static_cast<double>(p.bytes_total) : 0;
    std::fprintf(stderr, "\rimporting %s: %3.0f%% of %s, %zu/%zu layers", shown.c_str(), pct > 100 ? 100 : pct,
                 mib(p.bytes_total).c_str(), p.layers_done, p.layers_total);
    std::fflush(stderr);
  };
  const auto result =
      store.import_archive(args[0], args.size() > 1 ? args[1] : std::string(),
                           terminal ? std::function<void(const ImageImportProgress&)>(progress) : nullptr);
  if (terminal) std::fputs("\r\033[K", stderr);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const auto& [name, id] : result.images) std::printf("%s\t%s\n", name.c_str(), id.c_str());
  for (const auto& name : result.moved)
    std::fprintf(stderr, "%s now names this image, not the one it named before\n", name.c_str());
  std::fprintf(stderr, "imported in %.1f s: %zu layers unpacked (%s), %zu already in the store\n", seconds,
               result.layers_unpacked, mib(result.bytes_unpacked).c_str(), result.layers_reused);
  return 0;
}

int list_images() {
  const auto images = ImageStore(store_dir()).list();
  std::printf("%-40s %-12s %10s %7s  %s\n", "NAME", "ID", "SIZE", "LAYERS", "IMPORTED");
  for (const auto& image : images) {
    for (const auto& name : image.names) {
      std::printf("%-40s %-12s %10s %7zu  %s\n", name.c_str(), short_id(image.id).c_str(), mib(image.bytes).c_str(),
                  image.layers.size(), image.imported.c_str());
    }
  }
  return 0;
}

int inspect_image(const std::string& name) {
  const ImageInfo image = ImageStore(store_dir()).inspect(name);
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : image.layers) layers.push_back({{"diffId", l.diff_id}, {"bytes", l.bytes}});
  const nlohmann::json out = {
      {"id", image.id},
      {"names", image.names},
      {"architecture", image.architecture},
      {"os", image.os},
      {"created", image.created},
      {"imported", image.imported},
      {"bytes", image.bytes},
      {"config",
       {{"Env", image.env},
        {"WorkingDir", image.working_dir},
        {"User", image.user},
        {"Entrypoint", image.entrypoint},
        {"Cmd", image.cmd},
        {"ExposedPorts", image.exposed_ports},
        {"Labels", image.labels}}},
      {"layers", layers},
  };
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int remove_image(const std::string& name) {
  const auto result = ImageStore(store_dir()).remove(name);
  for (const auto& removed : result.names_removed) std::printf("removed %s\n", removed.c_str());
  if (!result.image_removed) {
    std::fprintf(stderr, "the image stays: another name or a running sandbox still uses it\n");
  }
  std::fprintf(stderr, "%zu layers removed\n", result.layers_removed);
  return 0;
}

}  // namespace

int run_image_command(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kImageUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kFailed : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "import") return import_image(args);
    if (command == "list" || command == "ls") {
      if (!args.empty()) throw SandboxError(Reason::INVALID_INPUT, "image list takes no arguments");
      return list_images();
    }
    if ((command == "inspect" || command == "rm") && args.size() == 1) {
      return command == "inspect" ? inspect_image(args[0]) : remove_image(args[0]);
    }
    std::fputs(kImageUsage, stderr);
    return kFailed;
  } catch (const SandboxError& e) {
    // On a terminal, after a progress line.
    std::fprintf(stderr, "%smayura-run: %s: %s\n", ::isatty(STDERR_FILENO) == 1 ? "\n" : "",
                 std::string(reason_name(e.reason())).c_str(), e.what());
    return kFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mayura-run: INTERNAL: %s\n", e.what());
    return kFailed;
  }
}

}  // namespace mayura::tools
