// Disks, snapshots, fork and volumes: a sandbox of the test's own with a
// disk, its snapshot restored into another as it was when taken, and forked
// into two that start from its files as they are; a volume kept from one
// sandbox to the next; a disk's I/O bounded. These make sandboxes, so they need the runner's
// Sandboxes (ConformanceContext::sandboxes).

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "areas.hpp"
#include "check.hpp"
#include "mayura/random_id.hpp"

namespace mayura::testing::conformance {
namespace {

// Every sandbox the test made, released however it ends.
struct Made {
  std::vector<Sandbox> sandboxes;
  ~Made() {
    for (const Sandbox& s : sandboxes) s.release();
  }
};

void snapshot_restore_and_fork(const ConformanceContext& context) {
  const Sandbox& s = context.sandbox;
  if (!s.features().snapshot) {
    check_fails(Reason::INVALID_INPUT, "snapshot on a provider without the feature", [&] { s.snapshot("x"); });
    check_fails(Reason::INVALID_INPUT, "fork on a provider without the feature", [&] { s.fork(1); });
    not_applicable("the provider does not claim snapshots (snapshot and fork failed INVALID_INPUT, as they must)");
  }
  if (!s.features().disk) fail("the provider claims snapshots without disks to take them of");
  if (!context.sandboxes) not_applicable("the runner gave no Sandboxes to make a sandbox with a disk in");
  const Sandboxes& sandboxes = *context.sandboxes;
  check_fails(Reason::INVALID_INPUT, "a snapshot of a sandbox without a disk", [&] { s.snapshot("x"); });
  check_fails(Reason::INVALID_INPUT, "a snapshot named with a slash", [&] { s.snapshot("a/b"); });

  Made made;
  CreateOptions with_disk;
  with_disk.lifetime_ms = 120'000;
  with_disk.disk_mib = 32;
  const Sandbox original = made.sandboxes.emplace_back(sandboxes.create(with_disk));
  original.write_file("kept", "before");
  const std::string name = "conformance-" + random_hex(12);
  const Snapshot taken = original.snapshot(name);
  check(taken.name == name, "the snapshot is named " + show(taken.name) + ", not " + show(name));
  check(taken.disk_mib == 32, "the snapshot's disk is " + show(std::to_string(taken.disk_mib)) + " MiB, not 32");
  bool listed = false;
  for (const Snapshot& each : sandboxes.snapshots()) listed = listed || each.name == name;
  check(listed, "snapshots() does not list " + show(name));
  original.write_file("kept", "after");

  CreateOptions from;
  from.lifetime_ms = 120'000;
  from.snapshot = name;
  const Sandbox restored = made.sandboxes.emplace_back(sandboxes.create(from));
  check(restored.read_file("kept") == "before", "the restored sandbox does not hold the file as it was snapshot");

  std::set<std::string> ids = {original.id(), restored.id()};
  for (const Sandbox& fork : original.fork(2)) {
    made.sandboxes.push_back(fork);
    ids.insert(fork.id());
    check(fork.read_file("kept") == "after", "a fork does not hold the file as it was when forked");
    fork.write_file("kept", fork.id());
  }
  check(ids.size() == 4, "a fork has the id of another sandbox");
  check(original.read_file("kept") == "after", "a fork's write reached the original");

  sandboxes.delete_snapshot(name);
  for (const Snapshot& each : sandboxes.snapshots()) check(each.name != name, "a deleted snapshot is still listed");
  check_fails(Reason::NOT_FOUND, "a create from a deleted snapshot", [&] { sandboxes.create(from); });
  check_fails(Reason::NOT_FOUND, "deleting a deleted snapshot", [&] { sandboxes.delete_snapshot(name); });
}

// The volume `name` as volumes() lists it, if it does.
std::optional<Volume> listed_volume(const Sandboxes& sandboxes, const std::string& name) {
  for (const Volume& v : sandboxes.volumes()) {
    if (v.name == name) return v;
  }
  return std::nullopt;
}

// A volume released by its last sandbox a moment ago may still be in use
// while that sandbox's removal finishes (INVALID_INPUT): deleted, trying
// again for a few seconds. Whatever else it fails with goes on up.
constexpr std::chrono::seconds kVolumeLetGo{10};

void delete_released_volume(const Sandboxes& sandboxes, const std::string& name) {
  const auto give_up = std::chrono::steady_clock::now() + kVolumeLetGo;
  for (;;) {
    const std::optional<Reason> got = reason_of([&] { sandboxes.delete_volume(name); });
    if (!got) return;
    if (*got != Reason::INVALID_INPUT) {
      fail("deleting a volume no sandbox uses any more: expected it deleted, got SandboxError " + show(*got));
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      fail("a volume was still in use " + std::to_string(kVolumeLetGo.count()) +
           " s after the sandbox that used it was released");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The test's volume, deleted however the test ends (after its sandboxes,
// which are released first: declared before them).
struct KeptVolume {
  const Sandboxes& sandboxes;
  std::string name;
  bool deleted = false;
  ~KeptVolume() {
    if (deleted) return;
    try {
      delete_released_volume(sandboxes, name);
    } catch (...) {
      // never made, or the test's failure says why
    }
  }
};

void volume_kept_across_sandboxes(const ConformanceContext& context) {
  const Sandbox& s = context.sandbox;
  if (!s.features().volumes) {
    if (!context.sandboxes) not_applicable("the provider does not claim volumes");
    check_fails(Reason::INVALID_INPUT, "create_volume on a provider without the feature",
                [&] { context.sandboxes->create_volume("conformance", 16); });
    CreateOptions mounting;
    mounting.lifetime_ms = 60'000;
    mounting.volumes = {{"conformance", "/mnt/conformance", false}};
    check_fails(Reason::INVALID_INPUT, "a create mounting a volume on a provider without the feature",
                [&] { context.sandboxes->create(mounting).release(); });
    not_applicable("the provider does not claim volumes (create_volume failed INVALID_INPUT, as it must)");
  }
  if (!context.sandboxes) not_applicable("the runner gave no Sandboxes to make volumes and sandboxes in");
  const Sandboxes& sandboxes = *context.sandboxes;
  const std::string name = "conformance-" + random_hex(12);
  check_fails(Reason::INVALID_INPUT, "a volume named with a slash", [&] { sandboxes.create_volume("a/b", 16); });
  check_fails(Reason::INVALID_INPUT, "a volume of 8 MiB (16 at least)", [&] { sandboxes.create_volume(name, 8); });
  // Mounted under the working directory: the file calls reach it by a
  // relative path.
  const std::string workdir = sandboxes.workdir();
  CreateOptions writing;
  writing.lifetime_ms = 120'000;
  writing.volumes = {{name, (workdir == "/" ? "" : workdir) + "/volume", false}};
  CreateOptions reading = writing;
  reading.volumes.front().read_only = true;
  check_fails(Reason::NOT_FOUND, "a create mounting a volume there is none of",
              [&] { sandboxes.create(writing).release(); });
  check_fails(Reason::NOT_FOUND, "deleting a volume there is none of", [&] { sandboxes.delete_volume(name); });

  KeptVolume kept{sandboxes, name};
  const Volume made_volume = sandboxes.create_volume(name, 16);
  check(made_volume.name == name, "the volume is named " + show(made_volume.name) + ", not " + show(name));
  check(made_volume.size_mib == 16, "the volume is " + show(made_volume.size_mib) + " MiB, not 16");
  check(!made_volume.in_use, "a new volume is said to be in use");
  check(listed_volume(sandboxes, name).has_value(), "volumes() does not list " + show(name));
  check_fails(Reason::INVALID_INPUT, "a second volume of a name taken", [&] { sandboxes.create_volume(name, 16); });

  Made made;
  const Sandbox writer = made.sandboxes.emplace_back(sandboxes.create(writing));
  writer.write_file("volume/kept", "written");
  const std::optional<Volume> used = listed_volume(sandboxes, name);
  check(used && used->in_use, "volumes() does not say the volume is in use while a sandbox mounts it");
  // One sandbox at a time, and no deletion meanwhile.
  check_fails(Reason::INVALID_INPUT, "a create mounting a volume another sandbox uses",
              [&] { sandboxes.create(reading).release(); });
  check_fails(Reason::INVALID_INPUT, "deleting a volume a sandbox uses", [&] { sandboxes.delete_volume(name); });
  writer.release();

  // Released: the next sandbox mounts it, read-only, and finds the file.
  const Sandbox reader = made.sandboxes.emplace_back(sandboxes.create(reading));
  check(reader.read_file("volume/kept") == "written", "a volume does not hold the file a sandbox before wrote");
  check(reason_of([&] { reader.write_file("volume/new", "x"); }).has_value(),
        "a file was written to a volume mounted read-only");
  const ExecResult shell = reader.exec({"sh", "-c", "echo x > volume/other"});
  check(shell.exit_code != 0, "a command wrote to a volume mounted read-only");
  check_eq(names_of(reader.list("volume")), std::vector<std::string>{"kept"}, "what a read-only volume holds");
  reader.release();

  delete_released_volume(sandboxes, name);
  kept.deleted = true;
  check(!listed_volume(sandboxes, name), "a deleted volume is still listed");
  check_fails(Reason::NOT_FOUND, "a create mounting a deleted volume", [&] { sandboxes.create(writing).release(); });
  check_fails(Reason::NOT_FOUND, "deleting a deleted volume", [&] { sandboxes.delete_volume(name); });
}

// A disk's I/O bounds: a provider that claims them takes a bounded create
// and runs in it, and refuses bounds it cannot keep and a bound with
// nothing to bound; one that does not refuses any.
void disk_io_bounded_or_refused(const ConformanceContext& context) {
  if (!context.sandboxes) not_applicable("the runner gave no Sandboxes to make a sandbox with a disk in");
  const Sandboxes& sandboxes = *context.sandboxes;
  CreateOptions bounded;
  bounded.lifetime_ms = 120'000;
  bounded.disk_mib = 32;
  bounded.disk_io = DiskIo{.write_bps = 1 << 20, .read_iops = 1000};
  if (!context.sandbox.features().disk_io) {
    check_fails(Reason::INVALID_INPUT, "a create bounding its disk's I/O on a provider without the feature",
                [&] { sandboxes.create(bounded).release(); });
    not_applicable("the provider does not claim disk I/O bounds (a bounded create failed INVALID_INPUT, as it must)");
  }
  if (!context.sandbox.features().disk) fail("the provider bounds disks' I/O without disks to bound");
  CreateOptions slow = bounded;
  slow.disk_io = DiskIo{.write_bps = 1000};
  check_fails(Reason::INVALID_INPUT, "a bound of 1000 bytes a second (at least 2^20)",
              [&] { sandboxes.create(slow).release(); });
  CreateOptions nothing = bounded;
  nothing.disk_mib.reset();
  check_fails(Reason::INVALID_INPUT, "a bound with no disk or volume to bound",
              [&] { sandboxes.create(nothing).release(); });
  Made made;
  const Sandbox s = made.sandboxes.emplace_back(sandboxes.create(bounded));
  const ExecResult wrote = s.exec({"sh", "-c", "head -c 1048576 /dev/zero > f && sync && wc -c < f"});
  check(wrote.exit_code == 0, "a write under the bound failed: " + show(wrote.stderr));
  check(wrote.stdout == "1048576\n", "a bounded disk holds " + show(wrote.stdout) + " bytes of the MiB written");
}

}  // namespace

std::vector<ConformanceTest> disk_tests() {
  return {make_context_test("disk_snapshot_restore_and_fork", snapshot_restore_and_fork),
          make_context_test("volume_kept_across_sandboxes", volume_kept_across_sandboxes),
          make_context_test("disk_io_bounded_or_refused", disk_io_bounded_or_refused)};
}

}  // namespace mayura::testing::conformance
