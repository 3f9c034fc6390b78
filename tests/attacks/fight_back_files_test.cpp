// A sandbox that fights back through its files: a directory of a million
// entries, a tree deeper than any path may be, files that grow, shrink and
// change while the engine reads and writes them, and a workdir filled to
// its last byte and inode. The engine answers each one, in bounded memory,
// with the bytes the sandbox holds or a clear error.

#include <chrono>
#include <future>
#include <string>
#include <string_view>

#include "attack.hpp"
#include "mayura/tools.hpp"

namespace mayura::testing {
namespace {

using FightBackFilesTest = AttackTest;

Tool find_tool(const std::vector<Tool>& tools, const std::string& id) {
  for (const auto& t : tools) {
    if (t.definition.id == id) return t;
  }
  throw std::runtime_error("no tool " + id);
}

RunContext reader_run(const std::string& name) {
  RunContext run;
  run.permissions = {"tool:" + name + ".list", "sandbox:" + name + ":list", "effect:read"};
  return run;
}

// A listing has a bound (64 MiB of answer), so the engine's memory has one:
// a million entries come back whole; a listing larger than the bound fails
// LIMIT_REACHED; neither holds more than a few hundred MiB at its peak. The
// tools give the model a listing no longer than its output bound, saying
// how many entries there are.
TEST_F(FightBackFilesTest, AMillionEntriesListInBoundedMemory) {
  options().tmpfs_inodes = 1'400'000;
  CreateOptions o;
  o.memory_mib = 3072;  // the inodes' kernel memory is the sandbox's
  auto sandbox = create(o);
  install_probe(sandbox);
  ExecOptions slow;
  slow.timeout_ms = 300'000;
  auto made = probe(sandbox, {"files", "/workspace/million", "1000000"}, slow);
  ASSERT_EQ(made["files"], "ok") << made["created"];
  // 260,000 names of 240 bytes: more than 64 MiB of listing
  made = probe(sandbox, {"files", "/workspace/long", "260000", "240"}, slow);
  ASSERT_EQ(made["files"], "ok") << made["created"];

  const long before = memory_mib();
  reset_peak_memory();
  {
    const auto million = sandbox.list("/workspace/million");
    EXPECT_EQ(million.size(), 1'000'000u);
    std::size_t files = 0;
    for (const auto& e : million) files += e.type == FileType::file && e.name.front() == 'f';
    EXPECT_EQ(files, 1'000'000u);
  }
  const long listed = peak_memory_mib() - before;
  reset_peak_memory();
  EXPECT_EQ(reason_of([&] { sandbox.list("/workspace/long"); }), Reason::LIMIT_REACHED);
  const long refused = peak_memory_mib() - before;
  RecordProperty("million_mib", static_cast<int>(listed));
  RecordProperty("over_bound_mib", static_cast<int>(refused));
  EXPECT_LT(listed, 768) << "MiB more at the peak of listing a million entries";
  EXPECT_LT(refused, 768) << "MiB more at the peak of refusing a listing over its bound";

  SandboxToolsOptions t;
  t.name = "workspace";
  const auto tools = sandbox_tools([sandbox](const RunContext&) { return sandbox; }, t);
  const auto answer =
      find_tool(tools, "workspace.list").call({{"path", "/workspace/million"}}, reader_run("workspace"));
  EXPECT_EQ(answer["truncated"], true);
  EXPECT_EQ(answer["total"], 1'000'000);
  EXPECT_GT(answer["entries"].size(), 100u);
  EXPECT_LE(answer.dump().size(), t.max_output_bytes + 200);
  // and the sandbox answers on
  EXPECT_EQ(sh(sandbox, "echo after"), "after\n");
}

// 25,000 directories, one in the other (on these machines more than the
// 20,000 descriptors a sandbox's process may hold, so a walk that keeps one
// open per level could not remove it): every path the engine takes is at
// most 4096 bytes, so the deep end is refused as input, never walked; the
// shallow end lists; and remove takes the whole tree away, leaving the
// sandbox as it was.
TEST_F(FightBackFilesTest, ATree25000LevelsDeepListsAndGoes) {
  auto sandbox = create();
  install_probe(sandbox);
  RecordProperty("open_file_limit", sh(sandbox, "ulimit -n"));
  auto made = probe(sandbox, {"deep", "/workspace/deep", "25000"});
  ASSERT_EQ(made["deep"], "ok") << made["levels"];
  const auto top = sandbox.list("/workspace/deep");
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].name, "d");
  EXPECT_EQ(top[0].type, FileType::directory);
  std::string path = "/workspace/deep";
  for (int i = 0; i < 2000; ++i) path += "/d";  // 4015 bytes, 2000 levels down
  EXPECT_EQ(sandbox.list(path).size(), 1u);
  sandbox.write_file(path + "/f", "deep");
  EXPECT_EQ(sandbox.read_file(path + "/f"), "deep");
  EXPECT_EQ(reason_of([&] {
              sandbox.list(path + "/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d");
            }),
            Reason::INVALID_INPUT);
  sandbox.remove("/workspace/deep");
  EXPECT_EQ(reason_of([&] { sandbox.list("/workspace/deep"); }), Reason::NOT_FOUND);
  // the whole listing, by an ls whose failure sh() reports: a count of
  // what a failed look printed would be 0 too
  EXPECT_EQ(sh(sandbox, "ls -A /workspace"), "probe\n");
}

// The sandbox appends to a file and cuts it back, again and again, while
// the engine reads it: each read is at most the bound, of the file's bytes
// ('a') or LIMIT_REACHED when it grew past the bound, never a hang or an
// internal error. (A read is not atomic against a truncate: tmpfs gives
// zeros for a page the truncate dropped that a write has not yet filled
// again, where the file's size still covers it, so a NUL may come back
// too; nothing else may.) A file that grows without end is refused at the
// bound.
TEST_F(FightBackFilesTest, AFileGrowingAndShrinkingWhileReadGivesBoundedBytes) {
  auto sandbox = create();
  ExecOptions eo;
  eo.timeout_ms = 120'000;
  auto changing = std::async(std::launch::async, [&] {
    return sandbox.exec(
        {"sh", "-c",
         "cd /workspace; : > f; touch ready; while [ ! -e stop ]; do "
         "head -c 300000 /dev/zero | tr '\\0' a >> f; head -c 100000 /dev/zero | tr '\\0' a > f; : > f; done"},
        eo);
  });
  sh(sandbox, "while [ ! -e /workspace/ready ]; do sleep 0.01; done");
  ReadOptions bound;
  bound.max_bytes = 200'000;
  std::size_t whole = 0, over = 0;
  for (int i = 0; i < 200; ++i) {
    try {
      const std::string got = sandbox.read_file("/workspace/f", bound);
      EXPECT_LE(got.size(), 200'000u);
      EXPECT_EQ(got.find_first_not_of(std::string_view("a\0", 2)), std::string::npos);
      ++whole;
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::LIMIT_REACHED) << e.what();
      ++over;
    }
  }
  RecordProperty("whole", static_cast<int>(whole));
  RecordProperty("over", static_cast<int>(over));
  EXPECT_GT(whole, 0u) << "no read came back whole: the bound was never tested against bytes";
  sandbox.write_file("/workspace/stop", "");
  ASSERT_EQ(changing.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(changing.get().exit_code, 0);

  // a file that never stops growing: read at the bound, and refused there
  auto growing = std::async(std::launch::async, [&] {
    return sandbox.exec(
        {"sh", "-c",
         "cd /workspace; touch endless; touch started; while [ ! -e stop2 ]; do echo grow >> endless; done"},
        eo);
  });
  sh(sandbox, "while [ ! -e /workspace/started ]; do sleep 0.01; done");
  sh(sandbox, "while [ $(stat -c %s /workspace/endless) -lt 1000 ]; do sleep 0.01; done");
  ReadOptions tiny;
  tiny.max_bytes = 500;
  EXPECT_EQ(reason_of([&] { sandbox.read_file("/workspace/endless", tiny); }), Reason::LIMIT_REACHED);
  sandbox.write_file("/workspace/stop2", "");
  ASSERT_EQ(growing.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(growing.get().exit_code, 0);
}

// The sandbox reads a file over and over while the engine rewrites it:
// each of the engine's writes lands whole (written beside, then renamed
// into place), so the sandbox never sees one half-written, nor a mix of two.
// (The other way round has no such promise: a read of a file the sandbox
// truncates and rewrites in place can see bytes of both, as any reader's
// would; AFileGrowingAndShrinking... holds the engine to its bound there.)
TEST_F(FightBackFilesTest, AFileTheEngineRewritesIsNeverSeenHalfWritten) {
  auto sandbox = create();
  sandbox.write_file("/workspace/f", std::string(100'000, 'A'));
  ExecOptions eo;
  eo.timeout_ms = 120'000;
  auto reading = std::async(std::launch::async, [&] {
    return sandbox.exec({"python3", "-c",
                         "import os\n"
                         "reads = torn = 0\n"
                         "open('/workspace/ready', 'w').close()\n"
                         "while not os.path.exists('/workspace/stop'):\n"
                         "    data = open('/workspace/f', 'rb').read()\n"
                         "    reads += 1\n"
                         "    torn += len(data) != 100000 or len(set(data)) != 1\n"
                         "print(f'reads={reads}\\ntorn={torn}')\n"},
                        eo);
  });
  sh(sandbox, "while [ ! -e /workspace/ready ]; do sleep 0.01; done");
  for (int i = 0; i < 200; ++i) sandbox.write_file("/workspace/f", std::string(100'000, i % 2 ? 'A' : 'B'));
  sandbox.write_file("/workspace/stop", "");
  ASSERT_EQ(reading.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const ExecResult r = reading.get();
  ASSERT_EQ(r.exit_code, 0) << r.stderr;
  auto seen = parse_results(r.stdout);
  RecordProperty("reads", seen["reads"]);
  EXPECT_GT(std::stoi(seen["reads"]), 0);
  EXPECT_EQ(seen["torn"], "0");
  // no temporary file of a write left beside it (.mayura-write-*), seen by
  // a look that must succeed and find the files known to be there
  EXPECT_EQ(sh(sandbox, "ls -A /workspace"), "f\nready\nstop\n");
}

// The sandbox fills its workdir to the last byte, then to the last inode,
// while the engine writes: each write that cannot fit fails LIMIT_REACHED,
// leaves the file it replaces as it was and no half-written one beside it,
// and once room is made, writes work again.
TEST_F(FightBackFilesTest, AWorkdirFullToTheLastByteAndInodeRefusesWritesAndKeepsFiles) {
  options().workdir_mib = 8;
  options().tmpfs_inodes = 400;
  auto sandbox = create();
  install_probe(sandbox);
  sandbox.write_file("/workspace/kept", "old content");

  auto full = probe(sandbox, {"fill", "/workspace/filler", std::to_string(64u << 20)});
  ASSERT_EQ(full["fill"], "ENOSPC");
  // not a byte more: even the last page the kernel holds back is taken
  sh(sandbox, "while printf x >> /workspace/filler 2>/dev/null; do :; done; true");
  EXPECT_EQ(reason_of([&] { sandbox.write_file("/workspace/new", std::string(64 * 1024, 'n')); }),
            Reason::LIMIT_REACHED);
  EXPECT_EQ(reason_of([&] { sandbox.write_file("/workspace/kept", std::string(64 * 1024, 'n')); }),
            Reason::LIMIT_REACHED);
  EXPECT_EQ(sandbox.read_file("/workspace/kept"), "old content");
  EXPECT_EQ(sh(sandbox, "ls -A /workspace"), "filler\nkept\nprobe\n");  // no new, no .mayura-write-*
  sandbox.remove("/workspace/filler");

  auto inodes = probe(sandbox, {"files", "/workspace/many", "1000"});
  ASSERT_EQ(inodes["files"], "ENOSPC");
  EXPECT_EQ(reason_of([&] { sandbox.write_file("/workspace/new", "n"); }), Reason::LIMIT_REACHED);
  // a write replaces a file through a new one: with no inode left, the
  // old stays
  EXPECT_EQ(reason_of([&] { sandbox.write_file("/workspace/kept", "new content"); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(sandbox.read_file("/workspace/kept"), "old content");
  EXPECT_EQ(sh(sandbox, "ls -A /workspace"), "kept\nmany\nprobe\n");
  sandbox.remove("/workspace/many");

  sandbox.write_file("/workspace/kept", "new content");
  EXPECT_EQ(sandbox.read_file("/workspace/kept"), "new content");
}

}  // namespace
}  // namespace mayura::testing
