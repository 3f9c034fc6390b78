// Path resolution, as a property: in a scratch tree of random directories,
// files and symlinks (relative, absolute, dangling, in loops), every random
// path the engine reads or lists resolves to what the sandbox's own
// `realpath -e` says, file for file and entry for entry, or fails (never
// INTERNAL) exactly where realpath finds nothing there.

#include <algorithm>
#include <random>
#include <sstream>

#include "harness.hpp"

namespace mayura::testing {
namespace {

using PathResolutionTest = NativeTest;

const std::vector<std::string> kNames = {"a", "b", "c", "l1", "l2", "f"};

struct Tree {
  std::string script;              // makes it, in the sandbox
  std::vector<std::string> paths;  // every name made, from the tree's top
};

class RandomTree {
 public:
  explicit RandomTree(unsigned seed) : random_(seed) {}

  Tree make(const std::string& top) {
    top_ = top;
    Tree tree;
    tree.script = "set -e; rm -rf " + top + "; mkdir " + top + "; cd " + top + "; ";
    fill("", 0, tree);
    return tree;
  }

  // A path from the tree's top, from a name in it, from "/", or relative to
  // the workdir, and 0 to 3 components more (names of the tree, ".", "..").
  std::string path(const Tree& tree) {
    std::string p;
    const int start = pick(20);
    int parts = pick(4);
    if (start < 4) {
      p = top_;
    } else if (start < 14 && !tree.paths.empty()) {
      p = top_ + "/" + tree.paths[pick(static_cast<int>(tree.paths.size()))];
    } else if (start < 15) {
      p = "/";
    } else {
      p = "t";  // relative to the workdir, which holds the tree
    }
    if (p == "/" && parts == 0) parts = 1;
    for (int i = 0; i < parts; ++i) {
      const int r = pick(10);
      const std::string part = r < 2 ? "." : r < 4 ? ".." : kNames[pick(static_cast<int>(kNames.size()))];
      if (p.back() != '/') p += "/";
      p += part;
    }
    return p;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(random_); }

  // A symlink's target: relative (with "..") or absolute into the tree, or
  // to a name that may not exist.
  std::string target() {
    std::string t = pick(4) == 0 ? top_ : "";
    const int parts = 1 + pick(3);
    for (int i = 0; i < parts; ++i) {
      if (!t.empty()) t += "/";
      t += pick(4) == 0 ? ".." : kNames[pick(static_cast<int>(kNames.size()))];
    }
    return t;
  }

  void fill(const std::string& dir, int depth, Tree& tree) {
    std::vector<std::string> names = kNames;
    std::shuffle(names.begin(), names.end(), random_);
    names.resize(2 + pick(3));
    for (const auto& name : names) {
      const std::string path = dir.empty() ? name : dir + "/" + name;
      const int kind = depth >= 3 ? 1 + pick(2) : pick(3);
      tree.paths.push_back(path);
      if (kind == 0) {
        tree.script += "mkdir " + path + "; ";
        fill(path, depth + 1, tree);
      } else if (kind == 1) {
        tree.script += "printf %s " + top_ + "/" + path + " > " + path + "; ";
      } else {
        tree.script += "ln -s " + target() + " " + path + "; ";
      }
    }
  }

  std::mt19937 random_;
  std::string top_;
};

// What the sandbox's shell finds at `path`: "file\tCONTENT", "dir\tNAMES/"
// (sorted), "other" or "none".
std::string shell_check(const std::vector<std::string>& paths) {
  std::string script =
      "check() { if r=$(realpath -e -- \"$1\" 2>/dev/null); then "
      "if [ -d \"$r\" ]; then printf 'dir\\t%s\\n' \"$(LC_ALL=C ls -A -- \"$r\" | LC_ALL=C sort | tr '\\n' /)\"; "
      "elif [ -f \"$r\" ]; then printf 'file\\t%s\\n' \"$(cat -- \"$r\")\"; else echo other; fi; "
      "else echo none; fi; }; ";
  for (const auto& p : paths) script += "check '" + p + "'; ";
  return script;
}

TEST_F(PathResolutionTest, TheEngineResolvesEveryPathAsRealpathDoes) {
  auto sandbox = create();
  const unsigned seeds[] = {1, 2, 3, 4, 5};
  int compared = 0, found = 0;
  for (const unsigned seed : seeds) {
    RandomTree random(seed);
    const Tree tree = random.make("/workspace/t");
    sh(sandbox, tree.script);
    std::vector<std::string> paths;
    paths.reserve(40);
    for (int i = 0; i < 40; ++i) paths.push_back(random.path(tree));
    std::istringstream answers(sh(sandbox, shell_check(paths)));
    for (const auto& p : paths) {
      std::string answer;
      ASSERT_TRUE(std::getline(answers, answer)) << "no answer for " << p;
      SCOPED_TRACE("seed " + std::to_string(seed) + ", path " + p + ", realpath: " + answer);
      ++compared;
      const std::string kind = answer.substr(0, answer.find('\t'));
      const std::string detail = answer.find('\t') == std::string::npos ? "" : answer.substr(answer.find('\t') + 1);
      // read_file: the file realpath finds, or a clear failure
      try {
        const std::string data = sandbox.read_file(p);
        EXPECT_EQ(kind, "file");
        EXPECT_EQ(data, detail);
        ++found;
      } catch (const SandboxError& e) {
        EXPECT_NE(kind, "file") << e.what();
        EXPECT_NE(e.reason(), Reason::INTERNAL) << e.what();
      }
      // list: the directory realpath finds, entry for entry
      try {
        std::vector<std::string> names;
        for (const auto& entry : sandbox.list(p)) names.push_back(entry.name);
        std::sort(names.begin(), names.end());
        std::string joined;
        for (const auto& n : names) joined += n + "/";
        EXPECT_EQ(kind, "dir");
        EXPECT_EQ(joined, detail);
        ++found;
      } catch (const SandboxError& e) {
        EXPECT_NE(kind, "dir") << e.what();
        EXPECT_NE(e.reason(), Reason::INTERNAL) << e.what();
      }
    }
  }
  RecordProperty("paths", compared);
  RecordProperty("resolved", found);
  // the random paths reach something often enough to mean something
  EXPECT_GT(found, compared / 5);
}

}  // namespace
}  // namespace mayura::testing
