// Files: what write_file writes is what the sandbox's commands see and what
// read_file gives back, byte for byte; paths are relative to the workdir or
// absolute; list and remove.

#include <algorithm>

#include "areas.hpp"
#include "check.hpp"
#include "mayura/runtime.hpp"

namespace mayura::testing::conformance {
namespace {

// Bytes as `od -An -v -tx1` shows them, without its spacing.
std::string hex_of(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

// The bytes of a file as the sandbox's own commands see them, in hex.
std::string hex_in_sandbox(const Sandbox& s, const std::string& path, const std::string& range = "cat") {
  return sh(s, range + " " + quote(path) + " | od -An -v -tx1 | tr -d ' \\n'");
}

// The size of a file as the sandbox's own commands see it.
std::string size_in_sandbox(const Sandbox& s, const std::string& path) {
  return sh(s, "wc -c < " + quote(path) + " | tr -d ' \\n'");
}

void text(const Sandbox& s) {
  Scratch dir(s, "text");
  const std::string body = "hello\nworld\n";
  s.write_file(dir.path("hello.txt"), body);
  check_eq(s.read_file(dir.path("hello.txt")), body, "read_file of what write_file wrote (relative path)");
  check_eq(s.read_file(dir.absolute("hello.txt")), body,
           "read_file by the absolute path of a file written by a relative one");
  ExecOptions in_dir;
  in_dir.cwd = dir.relative();
  check_eq(s.exec({"cat", "hello.txt"}, in_dir).stdout, body, "cat of what write_file wrote");

  s.write_file(dir.absolute("abs.txt"), "absolute");
  check_eq(s.read_file(dir.path("abs.txt")), "absolute",
           "read_file by the relative path of a file written by an absolute one");

  // an overwrite replaces the whole file: nothing of a longer old one is left
  s.write_file(dir.path("hello.txt"), "hi");
  check_eq(s.read_file(dir.path("hello.txt")), "hi", "read_file after overwriting with shorter text");
  check_eq(size_in_sandbox(s, dir.path("hello.txt")), "2",
           "the size in the sandbox after overwriting with shorter text");

  // and what a command writes, read_file reads
  sh(s, "printf 'from a command' > made.txt", in_dir);
  check_eq(s.read_file(dir.path("made.txt")), "from a command", "read_file of a file a command wrote");
}

void binary(const Sandbox& s) {
  Scratch dir(s, "binary");
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  for (int b = 255; b >= 0; --b) bytes.push_back(static_cast<char>(b));
  bytes += std::string("\r\n\n\r\0\0", 6);
  s.write_file(dir.path("bytes.bin"), bytes);
  check_eq(s.read_file(dir.path("bytes.bin")), bytes, "read_file of every byte value");
  check_eq(hex_in_sandbox(s, dir.path("bytes.bin")), hex_of(bytes), "every byte value as the sandbox's od sees it");
}

void empty(const Sandbox& s) {
  Scratch dir(s, "empty");
  s.write_file(dir.path("empty"), "");
  check_eq(s.read_file(dir.path("empty")), "", "read_file of an empty file");
  const auto entries = s.list(dir.relative());
  check(entries.size() == 1 && entries[0].name == "empty" && entries[0].type == FileType::file && entries[0].size == 0,
        "an empty file written: the listing is " + show(names_of(entries)) +
            (entries.empty() ? "" : ", its first " + show(entries[0].type) + " of size " + show(entries[0].size)));
  s.write_file(dir.path("was-full"), "something");
  s.write_file(dir.path("was-full"), "");
  check_eq(size_in_sandbox(s, dir.path("was-full")), "0", "the size in the sandbox of a file overwritten with nothing");
}

void large(const Sandbox& s) {
  Scratch dir(s, "large");
  // 8 MiB of a sequence that does not repeat soon, so a chunk lost, doubled
  // or moved shows
  std::string bytes(8u << 20, '\0');
  std::uint32_t x = 2463534242u;
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  s.write_file(dir.path("large.bin"), bytes);
  check_eq(size_in_sandbox(s, dir.path("large.bin")), std::to_string(bytes.size()),
           "the size in the sandbox of 8 MiB written");
  check_eq(hex_in_sandbox(s, dir.path("large.bin"), "head -c 64"), hex_of(std::string_view(bytes).substr(0, 64)),
           "the first 64 bytes in the sandbox of 8 MiB written");
  check_eq(hex_in_sandbox(s, dir.path("large.bin"), "tail -c 64"),
           hex_of(std::string_view(bytes).substr(bytes.size() - 64)),
           "the last 64 bytes in the sandbox of 8 MiB written");
  check_eq(s.read_file(dir.path("large.bin")), bytes, "read_file of 8 MiB");
}

void parents(const Sandbox& s) {
  Scratch dir(s, "parents");
  s.write_file(dir.path("a/b/c/deep.txt"), "deep");
  check_eq(s.read_file(dir.path("a/b/c/deep.txt")), "deep", "read_file of a file written where no directory was");
  const auto a = s.list(dir.path("a"));
  check(a.size() == 1 && a[0].name == "b" && a[0].type == FileType::directory,
        "write_file of a/b/c/deep.txt made a's listing " + show(names_of(a)) + " (one directory b expected)");
  s.write_file(dir.absolute("x/y.txt"), "y");
  check_eq(s.read_file(dir.path("x/y.txt")), "y",
           "read_file of a file written by an absolute path where no directory was");
}

void listing(const Sandbox& s) {
  Scratch dir(s, "list");
  // written out of order; listed in byte order of the names
  s.write_file(dir.path("b.txt"), "bbb");
  s.write_file(dir.path("dir/inner"), "i");
  s.write_file(dir.path("a.txt"), "a");
  s.write_file(dir.path("C.txt"), "CCCCC");
  s.write_file(dir.path(".hidden"), "hh");
  s.write_file(dir.path("zero"), "");
  sh(s, "cd " + quote(dir.relative()) + " && ln -s a.txt link && mkdir empty");

  struct Expected {
    std::string name;
    FileType type;
    std::optional<std::uint64_t> size;  // regular files only
  };
  const std::vector<Expected> expected = {
      {".hidden", FileType::file, 2},  {"C.txt", FileType::file, 5},     {"a.txt", FileType::file, 1},
      {"b.txt", FileType::file, 3},    {"dir", FileType::directory, {}}, {"empty", FileType::directory, {}},
      {"link", FileType::symlink, {}}, {"zero", FileType::file, 0},
  };
  std::vector<std::string> names;
  names.reserve(expected.size());
  for (const auto& e : expected) names.push_back(e.name);

  const auto entries = s.list(dir.relative());
  check_eq(names_of(entries), names, "the names of a listing, sorted (by bytes)");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    check_eq(entries[i].type, expected[i].type, "the type of " + expected[i].name);
    if (expected[i].size) check_eq(entries[i].size, *expected[i].size, "the size of " + expected[i].name);
  }
  check_eq(names_of(s.list(dir.absolute())), names, "the names of the listing by the absolute path");
  check_eq(names_of(s.list(dir.path("dir"))), std::vector<std::string>{"inner"}, "the listing of a subdirectory");
  check_eq(names_of(s.list(dir.path("empty"))), std::vector<std::string>{}, "the listing of an empty directory");
  // the workdir itself, by its default path
  const auto top = names_of(s.list());
  check(std::find(top.begin(), top.end(), dir.relative()) != top.end(),
        "list() (the workdir) does not show the test's directory " + dir.relative());
}

void removal(const Sandbox& s) {
  Scratch dir(s, "remove");
  s.write_file(dir.path("f.txt"), "f");
  s.remove(dir.path("f.txt"));
  check_fails(Reason::NOT_FOUND, "read_file of a removed file", [&] { s.read_file(dir.path("f.txt")); });

  // a directory goes with everything in it
  s.write_file(dir.path("tree/a/b/c.txt"), "c");
  s.write_file(dir.path("tree/x.txt"), "x");
  s.remove(dir.path("tree"));
  check_fails(Reason::NOT_FOUND, "list of a removed directory", [&] { s.list(dir.path("tree")); });
  check_fails(Reason::NOT_FOUND, "read_file in a removed directory", [&] { s.read_file(dir.path("tree/x.txt")); });

  sh(s, "cd " + quote(dir.relative()) + " && mkdir empty && mkdir keep && echo k > keep/file && ln -s keep link");
  s.remove(dir.absolute("empty"));
  // a link goes, not what it points to
  s.remove(dir.path("link"));
  check_eq(names_of(s.list(dir.relative())), std::vector<std::string>{"keep"},
           "the listing after removing an empty directory (by its absolute path) and a link to a directory");
  check_eq(s.read_file(dir.path("keep/file")), "k\n", "a file in the directory a removed link pointed to");
}

void files_from_many_threads(const Sandbox& s) {
  Scratch dir(s, "threads");
  constexpr int kThreads = 6;
  std::vector<std::string> wrong(kThreads);
  std::vector<OwnedThread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back("conformance", [&, t] {
      try {
        const std::string name = dir.path("file-" + std::to_string(t));
        const std::string body(64 * 1024 + static_cast<std::size_t>(t), static_cast<char>('a' + t));
        for (int i = 0; i < 3; ++i) {
          s.write_file(name, body);
          if (s.read_file(name) != body) wrong[static_cast<std::size_t>(t)] = name + " read back differently";
        }
      } catch (const SandboxError& e) {
        wrong[static_cast<std::size_t>(t)] = std::string("SandboxError ") + show(e.reason()) + ": " + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& w : wrong)
    check(w.empty(), "writing and reading files from " + show(kThreads) + " threads at once: " + w);
  check_eq(s.list(dir.relative()).size(), std::size_t{kThreads}, "the number of files written from many threads");
}

}  // namespace

std::vector<ConformanceTest> file_tests() {
  return {
      make_test("files_text", text),
      make_test("files_binary_every_byte", binary),
      make_test("files_empty", empty),
      make_test("files_large", large),
      make_test("files_write_makes_parents", parents),
      make_test("files_list", listing),
      make_test("files_remove", removal),
      make_test("files_from_many_threads", files_from_many_threads),
  };
}

}  // namespace mayura::testing::conformance
