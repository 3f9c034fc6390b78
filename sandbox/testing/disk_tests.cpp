// Disks, snapshots and fork: a sandbox of the test's own with a disk, its
// snapshot restored into another as it was when taken, and forked into two
// that start from its files as they are. These make sandboxes, so they need
// the runner's Sandboxes (ConformanceContext::sandboxes).

#include <set>
#include <string>
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

}  // namespace

std::vector<ConformanceTest> disk_tests() {
  return {make_context_test("disk_snapshot_restore_and_fork", snapshot_restore_and_fork)};
}

}  // namespace mayura::testing::conformance
