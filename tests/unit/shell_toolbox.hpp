#pragma once
// Shells and tools on the host, as a sandbox could have them: dash, bash or
// BusyBox sh first in PATH as `sh`, with coreutils or with BusyBox's applets
// alone (as on Alpine). Scripts run in a temporary directory, as an
// unprivileged test can run them.

#include <atomic>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <sys/types.h>

#include "mayura/command_backend.hpp"

namespace mayura::testing {

struct Toolbox {
  std::string name;   // for test names: dash, bash, busybox
  std::string shell;  // the program `sh` runs
  bool busybox_tools = false;
};

inline void PrintTo(const Toolbox& t, std::ostream* os) { *os << t.name; }

// Every toolbox the tests run under.
std::vector<Toolbox> all_toolboxes();

struct ShellResult {
  int exit_code = -1;
  std::string stdout;
  std::string stderr;
};

// A temporary directory with the toolbox's bin directory in it; removed
// when it goes.
class ShellPlace {
 public:
  explicit ShellPlace(const Toolbox& toolbox);
  ~ShellPlace();
  ShellPlace(const ShellPlace&) = delete;
  ShellPlace& operator=(const ShellPlace&) = delete;

  // Where scripts start: an empty directory of its own.
  const std::string& work() const { return work_; }
  const std::string& path_variable() const { return path_; }
  // Runs `sh -c script` in work() with only PATH (and `env`) in its
  // environment.
  ShellResult run(const std::string& script, const std::optional<std::string>& stdin = std::nullopt,
                  const std::vector<std::string>& env = {}) const;
  // The same as an unprivileged user: the shell's child drops to `uid`
  // (group too, no supplementary groups) before it starts, so permission
  // checks apply even when the tests run as root. work() and its parent are
  // opened to that user to enter; what else it may touch is the test's to set.
  ShellResult run_as(uid_t uid, const std::string& script) const;

 private:
  std::string root_;
  std::string work_;
  std::string path_;
  std::string shell_;

  pid_t start(char* const argv[], char* const envp[], int in, int out, int err) const;
  pid_t start_as(uid_t uid, char* const argv[], char* const envp[], int in, int out, int err) const;
  ShellResult run_with(const std::string& script, const std::optional<std::string>& stdin,
                       const std::vector<std::string>& env, std::optional<uid_t> uid) const;
};

// A command transport that runs each command with ShellPlace::run.
class LocalTransport final : public CommandTransport {
 public:
  LocalTransport(const ShellPlace& place, bool takes_stdin, std::size_t max_command_bytes = 64 * 1024)
      : place_(place), takes_stdin_(takes_stdin), max_command_bytes_(max_command_bytes) {}
  TransportResult run(const std::string& command, const TransportOptions& options) override;
  bool takes_stdin() const override { return takes_stdin_; }
  std::size_t max_command_bytes() const override { return max_command_bytes_; }

  int calls() const { return calls_; }
  // The start of every command run so far.
  std::vector<std::string> command_heads() const;
  // The first line of what every command run so far printed.
  std::vector<std::string> answer_heads() const;

 private:
  const ShellPlace& place_;
  bool takes_stdin_;
  std::size_t max_command_bytes_;
  std::atomic<int> calls_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> heads_;
  std::vector<std::string> answers_;
};

}  // namespace mayura::testing
