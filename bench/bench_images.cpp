// Importing and first running a 100 MiB image, side by side with the
// anchors in one run:
//   (a) mayura::ImageStore import of a docker-save archive (uncompressed
//       layers) into an empty store, (b) of an OCI archive with gzip layers,
//       (c) of the same OCI archive again (every layer already stored)
//   (d) GNU tar extracting the same layers (the uncompressed archive's
//       layer tars, and the gzip ones through tar -z): the floor an unpacker
//       meets on this disk
//   (e) the first create + exec true + release on the imported image, and
//       (f) the next ones
//   (g) bwrap running true on the unpacked root (the layers merged by tar)
//   (h) with mayura-run's path: `mayura-run image import` of the docker-save
//       archive into an empty store, and (i) the first `mayura-run --image
//       ... /bin/true` on it (cold caches), as a user meets them
// The image: the BusyBox layers of the tests plus one layer of 100 MiB of
// incompressible files.
//
// usage: bench_images [MIB] [ITERATIONS] [PATH-TO-mayura-run]

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "image_archives.hpp"
#include "mayura/images.hpp"
#include "mayura/native.hpp"
#include "run_quietly.hpp"
#include "mayura/sandbox.hpp"

namespace fs = std::filesystem;
namespace img = mayura::testing::images;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_of(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool run(const std::vector<std::string>& argv) { return mayura::bench::run_quietly(argv); }

void drop_caches() {
  ::sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  const std::string work = "/var/tmp/mayura-bench-images";
  fs::remove_all(work);
  fs::create_directories(work);

  auto spec = img::busybox_spec(img::Compression::none);
  spec.layers.push_back(img::big_layer(mib << 20, 7));
  spec.cmd = {"/bin/true"};
  const std::string docker = work + "/image-docker.tar";
  const std::string oci = work + "/image-oci-gzip.tar";
  img::write_docker_archive(docker, spec, {"bench:docker"});
  auto gz = spec;
  gz.compression = img::Compression::gzip;
  img::write_oci_archive(oci, gz, "bench:oci");
  std::printf("image: %zu MiB of files over %zu layers; docker-save archive %.1f MiB, OCI gzip archive %.1f MiB\n\n",
              mib, spec.layers.size(), static_cast<double>(fs::file_size(docker)) / (1 << 20),
              static_cast<double>(fs::file_size(oci)) / (1 << 20));

  const std::string store_dir = work + "/store";
  mayura::ImageStore store(store_dir);
  drop_caches();
  const double import_docker = seconds_of([&] { store.import_archive(docker); });
  fs::remove_all(store_dir);
  drop_caches();
  const double import_oci = seconds_of([&] { store.import_archive(oci); });
  const double import_again = seconds_of([&] { store.import_archive(oci, "bench:again"); });

  // The anchor: GNU tar unpacking the same layer tars into one directory.
  const img::BuiltImage built = img::build_image(spec);
  const img::BuiltImage built_gz = img::build_image(gz);
  for (std::size_t i = 0; i < built.layers.size(); ++i) {
    std::ofstream(work + "/layer" + std::to_string(i) + ".tar") << built.layers[i].tar;
    std::ofstream(work + "/layer" + std::to_string(i) + ".tar.gz") << built_gz.layers[i].blob;
  }
  auto tar_all = [&](const char* suffix, const char* flags, const std::string& into) {
    fs::remove_all(into);
    fs::create_directories(into);
    return seconds_of([&] {
      for (std::size_t i = 0; i < built.layers.size(); ++i) {
        run({"tar", flags, work + "/layer" + std::to_string(i) + suffix, "-C", into});
      }
    });
  };
  drop_caches();
  const double tar_plain = tar_all(".tar", "-xpf", work + "/rootfs");
  drop_caches();
  const double tar_gzip = tar_all(".tar.gz", "-xzpf", work + "/rootfs");

  mayura::NativeOptions options;
  options.image_store = store_dir;
  options.state_dir = "/run/mayura-bench-images";
  options.prepared = 0;
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(options), {});
  mayura::CreateOptions create;
  create.lifetime_ms = 60000;
  create.image = "bench:oci";
  auto once = [&] {
    auto s = sandboxes.create(create);
    s.exec({"/bin/true"});
    s.release();
  };
  drop_caches();
  const double first_run = seconds_of(once);
  std::vector<double> next;
  next.reserve(iterations);
  for (int i = 0; i < iterations; ++i) next.push_back(seconds_of(once));
  std::sort(next.begin(), next.end());
  std::vector<double> bwrap;
  bwrap.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    bwrap.push_back(seconds_of([&] {
      run({"bwrap", "--ro-bind", work + "/rootfs", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-all",
           "--die-with-parent", "--cap-drop", "ALL", "/bin/true"});
    }));
  }
  std::sort(bwrap.begin(), bwrap.end());

  std::printf("%-62s %10s\n", "measurement", "result");
  std::printf("%-62s %8.2f s\n", "(a) import, docker save (uncompressed), empty store", import_docker);
  std::printf("%-62s %8.2f s\n", "(b) import, OCI with gzip layers, empty store", import_oci);
  std::printf("%-62s %8.3f s\n", "(c) import again, every layer in the store", import_again);
  std::printf("%-62s %8.2f s\n", "(d) anchor: GNU tar -xpf of the same layer tars", tar_plain);
  std::printf("%-62s %8.2f s\n", "(d) anchor: GNU tar -xzpf of the gzip layers", tar_gzip);
  std::printf("%-62s %8.1f ms\n", "(e) first create + exec true + release (cold caches)", first_run * 1000);
  std::printf("%-62s %8.1f ms\n", "(f) next ones, median", next[next.size() / 2] * 1000);
  std::printf("%-62s %8.1f ms\n", "(g) anchor: bwrap true on the unpacked root, median",
              bwrap[bwrap.size() / 2] * 1000);
  if (argc > 3) {
    const std::string cli_store = work + "/cli-store";
    ::setenv("MAYURA_IMAGE_STORE", cli_store.c_str(), 1);
    ::setenv("MAYURA_STATE_DIR", "/run/mayura-bench-images-cli", 1);
    drop_caches();
    const double cli_import = seconds_of([&] { run({argv[3], "image", "import", docker}); });
    drop_caches();
    const double cli_first = seconds_of([&] { run({argv[3], "--image", "bench:docker", "--", "/bin/true"}); });
    std::printf("%-62s %8.2f s\n", "(h) mayura-run image import (docker save), empty store", cli_import);
    std::printf("%-62s %8.1f ms\n", "(i) first mayura-run --image ... /bin/true (cold caches)", cli_first * 1000);
  }
  std::printf("\nratios: import (a)/(d) %.2f, (b)/(d gzip) %.2f\n", import_docker / tar_plain, import_oci / tar_gzip);
  fs::remove_all(work);
  return 0;
}
