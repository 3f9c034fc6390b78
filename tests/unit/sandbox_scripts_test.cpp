// sandbox_scripts under dash, bash and BusyBox (its sh and its applets
// alone), on the host in a directory of the test's own.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "mayura/base/base64.hpp"
#include "mayura/sandbox_scripts.hpp"
#include "shell_toolbox.hpp"

namespace mayura::testing {
namespace {

namespace fs = std::filesystem;
namespace scripts = sandbox_scripts;

std::string every_byte(std::size_t repeat) {
  std::string s;
  for (std::size_t r = 0; r < repeat; ++r) {
    for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  }
  return s;
}

// Names a listing must carry through unchanged.
std::vector<std::string> awkward_names() {
  return {"plain",
          "with space",
          "new\nline",
          "quote'\"",
          "\xc3\xbc"
          "n"
          "\xc3\xaf"
          "c"
          "\xc3\xb8"
          "d"
          "\xc3\xa9"
          " \xe2\x9c\x93",
          "-dash",
          ".hidden",
          "..dots",
          "...",
          "*",
          "[a]",
          "back\\slash",
          "tab\tname",
          "\x01\x7f\xff",
          "$(id)`id`"};
}

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_host_file(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

// Pids whose environment holds exactly `entry`.
std::vector<pid_t> processes_with(const std::string& entry) {
  std::vector<pid_t> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = read_host_file(e.path() / "environ");
    std::size_t start = 0;
    while (start < env.size()) {
      const auto end = std::min(env.find('\0', start), env.size());
      if (env.compare(start, end - start, entry) == 0) {
        found.push_back(std::stoi(name));
        break;
      }
      start = end + 1;
    }
  }
  return found;
}

class SandboxScripts : public ::testing::TestWithParam<Toolbox> {
 protected:
  ShellPlace place{GetParam()};
  std::string at(const std::string& name) const { return place.work() + "/" + name; }
  ShellResult sh(const std::string& script, const std::optional<std::string>& stdin = std::nullopt) const {
    return place.run(script, stdin);
  }
  // The suite runs as root, whom no permission stops: a refusal is shown as
  // an unprivileged user (nobody), for whom `owned` (relative names) are
  // made their own first.
  static constexpr uid_t kNobody = 65534;
  ShellResult sh_unprivileged(const std::string& script, const std::vector<std::string>& owned = {}) const {
    for (const auto& name : owned) EXPECT_EQ(::chown(at(name).c_str(), kNobody, kNobody), 0) << name;
    return place.run_as(kNobody, script);
  }
  // A read_file answer: the size line, and the data.
  std::pair<std::string, std::string> read(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                           std::uint64_t max = 1 << 30) const {
    const ShellResult r = sh(scripts::read_file(path, offset, length, max));
    EXPECT_EQ(r.exit_code, 0) << r.stderr;
    const auto newline = r.stdout.find('\n');
    auto data = detail::base64_decode(r.stdout.substr(newline + 1));
    EXPECT_TRUE(data.has_value());
    return {r.stdout.substr(0, newline), data.value_or("")};
  }
  std::vector<FileEntry> list(const std::string& path) const {
    const ShellResult r = sh(scripts::list(path));
    EXPECT_EQ(r.exit_code, 0) << r.stderr;
    return parse_sandbox_listing(r.stdout);
  }
};

TEST(SandboxScriptsQuote, SingleQuotesAndPaths) {
  EXPECT_EQ(scripts::quote(""), "''");
  EXPECT_EQ(scripts::quote("plain"), "'plain'");
  EXPECT_EQ(scripts::quote("it's"), "'it'\\''s'");
  EXPECT_EQ(scripts::quote("$(id) `id` \\ \""), "'$(id) `id` \\ \"'");
  EXPECT_EQ(scripts::path_word("-rf"), "'./-rf'");
  EXPECT_EQ(scripts::path_word("a b/c"), "'./a b/c'");
  EXPECT_EQ(scripts::path_word("/etc/passwd"), "'/etc/passwd'");
  EXPECT_EQ(scripts::path_word(""), "'.'");
  EXPECT_EQ(reason_name(scripts::failure(scripts::kNotFound, "x").reason()), "NOT_FOUND");
  EXPECT_EQ(reason_name(scripts::failure(scripts::kInvalid, "x").reason()), "INVALID_INPUT");
  EXPECT_EQ(reason_name(scripts::failure(scripts::kDenied, "x").reason()), "PERMISSION_DENIED");
  EXPECT_EQ(reason_name(scripts::failure(scripts::kTooLarge, "x").reason()), "LIMIT_REACHED");
  EXPECT_EQ(reason_name(scripts::failure(127, "x").reason()), "INTERNAL");
  EXPECT_THROW(scripts::kill("a b"), SandboxError);
  EXPECT_THROW(scripts::kill("x'; reboot; '"), SandboxError);
  EXPECT_THROW(scripts::kill(""), SandboxError);
}

TEST(SandboxScriptsBase64, RoundTripsAndRefusesGarbage) {
  for (std::size_t n = 0; n < 600; n += 7) {
    const std::string bytes = every_byte(3).substr(0, n);
    EXPECT_EQ(detail::base64_decode(detail::base64_encode(bytes)), bytes);
  }
  EXPECT_EQ(detail::base64_encode("abc"), "YWJj");
  EXPECT_EQ(detail::base64_encode("ab"), "YWI=");
  EXPECT_EQ(detail::base64_decode("YW\nJj\r\n"), "abc");  // as `base64` wraps it
  EXPECT_EQ(detail::base64_decode("YWI"), "ab");          // padding may be left off
  EXPECT_FALSE(detail::base64_decode("YW-j"));
  EXPECT_FALSE(detail::base64_decode("Y"));
  EXPECT_FALSE(detail::base64_decode("YWI=YWI="));
  EXPECT_FALSE(detail::base64_decode("Y==="));
}

TEST_P(SandboxScripts, QuotedWordsComeThroughTheShellUnchanged) {
  std::vector<std::string> words = awkward_names();
  words.push_back(every_byte(1).substr(1));  // no NUL
  words.push_back("");
  words.push_back("'''");
  words.push_back("a'b'\\''c");
  for (const auto& w : words) {
    const ShellResult r = sh("printf %s " + scripts::quote(w));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.stdout, w);
  }
}

TEST_P(SandboxScripts, ReadsChunksByBlocksAndAtAnyOffset) {
  const std::string data = every_byte(1024);  // 256 KiB
  write_host_file(at("data bin"), data);
  auto [size, whole] = read("data bin", 0, 1 << 20);
  EXPECT_EQ(size, "262144");
  EXPECT_EQ(whole, data);
  EXPECT_EQ(read("data bin", 65536, 65536).second, data.substr(65536, 65536));  // dd
  EXPECT_EQ(read("data bin", 1000, 70001).second, data.substr(1000, 70001));    // tail and head
  EXPECT_EQ(read("data bin", 262000, 65536 * 4).second, data.substr(262000));   // past the end
  EXPECT_EQ(read("data bin", 300000, 10).second, "");
  const auto only_size = read("data bin", 0, 0);
  EXPECT_EQ(only_size.first, "262144");
  EXPECT_EQ(only_size.second, "");
  // relative names that look like options, absolute paths, symlinks
  write_host_file(at("-n"), "dash");
  EXPECT_EQ(read("-n", 0, 100).second, "dash");
  EXPECT_EQ(read(at("-n"), 0, 100).second, "dash");
  fs::create_symlink("-n", at("link"));
  EXPECT_EQ(read("link", 0, 100).second, "dash");
  write_host_file(at("empty"), "");
  EXPECT_EQ(read("empty", 0, 100), (std::pair<std::string, std::string>{"0", ""}));
}

TEST_P(SandboxScripts, ReadFailsWithTheCodeOfEachReason) {
  write_host_file(at("file"), "12345");
  fs::create_directory(at("dir"));
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  fs::create_symlink("nowhere", at("dangling"));
  EXPECT_EQ(sh(scripts::read_file("missing", 0, 10, 100)).exit_code, scripts::kNotFound);
  EXPECT_EQ(sh(scripts::read_file("dangling", 0, 10, 100)).exit_code, scripts::kNotFound);
  EXPECT_EQ(sh(scripts::read_file("dir", 0, 10, 100)).exit_code, scripts::kInvalid);
  EXPECT_EQ(sh(scripts::read_file("fifo", 0, 10, 100)).exit_code, scripts::kInvalid);  // never opened, never hangs
  EXPECT_EQ(sh(scripts::read_file("file", 0, 10, 4)).exit_code, scripts::kTooLarge);
  EXPECT_EQ(sh(scripts::read_file("file", 0, 10, 5)).exit_code, 0);
  EXPECT_EQ(sh(scripts::read_file("file/x", 0, 10, 100)).exit_code, scripts::kNotFound);
}

TEST_P(SandboxScripts, ListingCarriesEveryNameAndKind) {
  fs::create_directory(at("d"));
  const std::string d = at("d/");
  for (const auto& name : awkward_names()) write_host_file(d + name, name);
  fs::create_symlink("plain", d + "link");
  fs::create_symlink("nowhere", d + "dangling");
  fs::create_directory(d + "sub");
  ASSERT_EQ(::mkfifo((d + "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::chmod((d + "plain").c_str(), 0640), 0);
  const timespec times[2] = {{1'700'000'000, 123'000'000}, {1'700'000'000, 123'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (d + "plain").c_str(), times, 0), 0);

  auto entries = list("d");
  std::sort(entries.begin(), entries.end(), [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
  std::vector<std::string> expected = awkward_names();
  for (const char* extra : {"link", "dangling", "sub", "fifo"}) expected.emplace_back(extra);
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (const auto& e : entries) names.push_back(e.name);
  EXPECT_EQ(names, expected);
  for (const auto& e : entries) {
    if (e.name == "plain") {
      EXPECT_EQ(e.type, FileType::file);
      EXPECT_EQ(e.size, 5u);
      EXPECT_EQ(e.mode, 0640u);
      // BusyBox's stat gives whole seconds
      EXPECT_GE(e.mtime_ms, 1'700'000'000'000);
      EXPECT_LE(e.mtime_ms, 1'700'000'000'123);
    } else if (e.name == "link" || e.name == "dangling") {
      EXPECT_EQ(e.type, FileType::symlink) << e.name;
    } else if (e.name == "sub") {
      EXPECT_EQ(e.type, FileType::directory);
    } else if (e.name == "fifo") {
      EXPECT_EQ(e.type, FileType::other);
      EXPECT_EQ(e.mode, 0600u);
    } else {
      EXPECT_EQ(e.type, FileType::file) << e.name;
      EXPECT_EQ(e.size, e.name.size()) << e.name;
    }
  }
  // the same through a symlink to the directory, and an absolute path
  fs::create_directory_symlink("d", at("dlink"));
  EXPECT_EQ(list("dlink").size(), expected.size());
  EXPECT_EQ(list(at("d")).size(), expected.size());
}

TEST_P(SandboxScripts, ListingOfEmptyAndGlobLookingDirectories) {
  fs::create_directory(at("empty"));
  EXPECT_TRUE(list("empty").empty());
  EXPECT_EQ(sh(scripts::list("empty")).stdout, "0\n");
  // a pattern that matches nothing stays as it is: the only names here are
  // the patterns themselves
  for (const char* pattern : {"*", ".[!.]*", "..?*"}) {
    const std::string dir = std::string("only") + std::to_string(std::string_view(pattern).size());
    fs::create_directory(at(dir));
    write_host_file(at(dir) + "/" + pattern, "x");
    const auto entries = list(dir);
    ASSERT_EQ(entries.size(), 1u) << pattern;
    EXPECT_EQ(entries[0].name, pattern);
  }
  fs::create_directory(at("many"));
  for (int i = 0; i < 3000; ++i) write_host_file(at("many/f") + std::to_string(i), "");
  EXPECT_EQ(list("many").size(), 3000u);
}

TEST_P(SandboxScripts, ListFailsWithTheCodeOfEachReason) {
  write_host_file(at("file"), "x");
  EXPECT_EQ(sh(scripts::list("missing")).exit_code, scripts::kNotFound);
  EXPECT_EQ(sh(scripts::list("file")).exit_code, scripts::kInvalid);
  fs::create_directory(at("closed"));
  fs::permissions(at("closed"), fs::perms::none);
  const ShellResult denied = sh_unprivileged(scripts::list("closed"), {"closed"});
  EXPECT_EQ(denied.exit_code, scripts::kDenied) << denied.stderr;
  // the same user lists what it may
  EXPECT_EQ(sh_unprivileged(scripts::list("file")).exit_code, scripts::kInvalid);
}

TEST_P(SandboxScripts, RemovesFilesTreesAndLinksNotWhatTheyPointTo) {
  write_host_file(at("file"), "x");
  fs::create_directories(at("tree/a/b/c"));
  write_host_file(at("tree/a/b/c/deep"), "x");
  write_host_file(at("tree/a/.hidden"), "x");
  fs::create_directory(at("keep"));
  write_host_file(at("keep/precious"), "x");
  fs::create_directory_symlink("keep", at("tree/a/link"));
  fs::create_directory_symlink("keep", at("toplink"));
  EXPECT_EQ(sh(scripts::remove("file")).exit_code, 0);
  EXPECT_FALSE(fs::exists(at("file")));
  EXPECT_EQ(sh(scripts::remove("tree")).exit_code, 0);
  EXPECT_FALSE(fs::exists(at("tree")));
  EXPECT_EQ(sh(scripts::remove("toplink")).exit_code, 0);
  EXPECT_FALSE(fs::is_symlink(at("toplink")));
  EXPECT_TRUE(fs::exists(at("keep/precious")));
  fs::create_symlink("nowhere", at("dangling"));
  EXPECT_EQ(sh(scripts::remove("dangling")).exit_code, 0);
  EXPECT_FALSE(fs::is_symlink(at("dangling")));
  EXPECT_EQ(sh(scripts::remove("missing")).exit_code, scripts::kNotFound);
  EXPECT_EQ(sh(scripts::remove("keep/.")).exit_code, scripts::kInvalid);
  EXPECT_EQ(sh(scripts::remove("keep/..")).exit_code, scripts::kInvalid);
  EXPECT_EQ(sh(scripts::remove("keep/")).exit_code, scripts::kInvalid);
  EXPECT_TRUE(fs::exists(at("keep/precious")));
  fs::permissions(at("keep"), fs::perms::owner_read | fs::perms::owner_exec);
  const ShellResult denied = sh_unprivileged(scripts::remove("keep/precious"), {"keep"});
  EXPECT_EQ(denied.exit_code, scripts::kDenied) << denied.stderr;
  EXPECT_TRUE(fs::exists(at("keep/precious")));
}

TEST_P(SandboxScripts, WritesThroughATemporaryFileKeepingTheMode) {
  const std::string data = every_byte(300);
  const std::string b64 = detail::base64_encode(data);
  // prepare, then chunks inline and on standard input, then into place
  EXPECT_EQ(sh(scripts::prepare_write("a/b/c.bin")).exit_code, 0);
  EXPECT_TRUE(fs::is_directory(at("a/b")));
  EXPECT_EQ(sh(scripts::write_chunk("a/b/.tmp", scripts::WriteMode::truncate, b64.substr(0, 4000))).exit_code, 0);
  EXPECT_EQ(sh(scripts::write_chunk("a/b/.tmp", scripts::WriteMode::append), b64.substr(4000)).exit_code, 0);
  EXPECT_EQ(sh(scripts::replace_file("a/b/.tmp", "a/b/c.bin")).exit_code, 0);
  EXPECT_EQ(read_host_file(at("a/b/c.bin")), data);
  EXPECT_FALSE(fs::exists(at("a/b/.tmp")));
  EXPECT_EQ(fs::status(at("a/b/c.bin")).permissions(), static_cast<fs::perms>(0644));
  // truncating starts over; an existing file's mode stays
  fs::permissions(at("a/b/c.bin"), static_cast<fs::perms>(0750));
  EXPECT_EQ(sh(scripts::write_chunk("a/b/.tmp", scripts::WriteMode::truncate), detail::base64_encode("new")).exit_code,
            0);
  EXPECT_EQ(sh(scripts::replace_file("a/b/.tmp", "a/b/c.bin")).exit_code, 0);
  EXPECT_EQ(read_host_file(at("a/b/c.bin")), "new");
  EXPECT_EQ(fs::status(at("a/b/c.bin")).permissions(), static_cast<fs::perms>(0750));
  // an empty chunk makes an empty file
  EXPECT_EQ(sh(scripts::write_chunk("empty", scripts::WriteMode::truncate, "")).exit_code, 0);
  EXPECT_TRUE(fs::exists(at("empty")));
  EXPECT_EQ(fs::file_size(at("empty")), 0u);
}

TEST_P(SandboxScripts, WriteRefusesDirectoriesAndFilesAmongTheParents) {
  fs::create_directory(at("dir"));
  write_host_file(at("file"), "x");
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_EQ(sh(scripts::prepare_write("dir")).exit_code, scripts::kInvalid);
  EXPECT_EQ(sh(scripts::prepare_write("fifo")).exit_code, scripts::kInvalid);
  EXPECT_EQ(sh(scripts::prepare_write("file/x")).exit_code, scripts::kInvalid);
  EXPECT_EQ(sh(scripts::prepare_write("file/x/y/z")).exit_code, scripts::kInvalid);
  write_host_file(at(".tmp"), "x");
  EXPECT_EQ(sh(scripts::replace_file(".tmp", "dir")).exit_code, scripts::kInvalid);
  EXPECT_FALSE(fs::exists(at(".tmp")));
  EXPECT_TRUE(fs::is_directory(at("dir")));
  fs::create_directory(at("closed"));
  fs::permissions(at("closed"), fs::perms::owner_read | fs::perms::owner_exec);
  ASSERT_EQ(::chown(at("closed").c_str(), kNobody, kNobody), 0);
  const ShellResult file_denied = sh_unprivileged(scripts::prepare_write("closed/x"));
  EXPECT_EQ(file_denied.exit_code, scripts::kDenied) << file_denied.stderr;
  const ShellResult dir_denied = sh_unprivileged(scripts::prepare_write("closed/sub/x"));
  EXPECT_EQ(dir_denied.exit_code, scripts::kDenied) << dir_denied.stderr;
  EXPECT_FALSE(fs::exists(at("closed/sub")));
}

TEST_P(SandboxScripts, KillStopsEveryProcessOfTheTagAndNothingElse) {
  const std::string tag = "t" + std::to_string(::getpid()) + GetParam().name;
  // A tree that forks as fast as it can (bounded, should kill fail), a
  // nested shell, and processes whose tags only look alike.
  const std::string forker = "i=0; while [ $i -lt 3000 ]; do sleep 1000 & i=$((i+1)); done; wait";
  const ShellResult started =
      sh("MAYURA_TAG=" + tag + " sh -c " + scripts::quote(forker) + " > /dev/null 2>&1 &\n" + "MAYURA_TAG=" + tag +
         " sh -c 'sh -c \"sleep 1000\"' > /dev/null 2>&1 &\n" + "MAYURA_TAG=" + tag +
         "x sleep 1000 > /dev/null 2>&1 &\n" + "XMAYURA_TAG=" + tag + " sleep 1000 > /dev/null 2>&1 &\n");
  ASSERT_EQ(started.exit_code, 0);
  // the kill comes once everything is there: the forker's children, the
  // nested sleep and both lookalikes (the bound only keeps a setup that
  // never gets there from hanging)
  const auto all_up = [&] {
    return processes_with("MAYURA_TAG=" + tag).size() > 3u && processes_with("MAYURA_TAG=" + tag + "x").size() == 1u &&
           processes_with("XMAYURA_TAG=" + tag).size() == 1u;
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!all_up() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(processes_with("MAYURA_TAG=" + tag).size(), 3u);
  EXPECT_EQ(processes_with("MAYURA_TAG=" + tag + "x").size(), 1u);
  EXPECT_EQ(processes_with("XMAYURA_TAG=" + tag).size(), 1u);

  const ShellResult killed = sh(scripts::kill(tag));
  EXPECT_EQ(killed.exit_code, 0) << killed.stderr;
  EXPECT_TRUE(processes_with("MAYURA_TAG=" + tag).empty());
  EXPECT_EQ(processes_with("MAYURA_TAG=" + tag + "x").size(), 1u);
  EXPECT_EQ(processes_with("XMAYURA_TAG=" + tag).size(), 1u);
  // a tag with nothing left is no failure
  EXPECT_EQ(sh(scripts::kill(tag)).exit_code, 0);

  EXPECT_EQ(sh(scripts::kill(tag + "x")).exit_code, 0);
  EXPECT_TRUE(processes_with("MAYURA_TAG=" + tag + "x").empty());
  for (pid_t pid : processes_with("XMAYURA_TAG=" + tag)) ::kill(pid, SIGKILL);
}

INSTANTIATE_TEST_SUITE_P(Shells, SandboxScripts, ::testing::ValuesIn(all_toolboxes()),
                         [](const ::testing::TestParamInfo<Toolbox>& p) { return p.param.name; });

}  // namespace
}  // namespace mayura::testing
