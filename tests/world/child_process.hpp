#pragma once
// A program run as a child of the test process, optionally inside a network
// namespace. Killed and reaped when the object goes, so a test never leaves
// one behind.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mayura::testing {

class ChildProcess {
 public:
  // Starts argv[0] (looked up in PATH) with stdin from /dev/null and stdout
  // and stderr appended to `log`; inside the network namespace `netns` when
  // it is not -1. Throws std::runtime_error if it cannot start. The child
  // is also killed when the thread that made it ends (PR_SET_PDEATHSIG), so
  // make it on a thread that outlives the object.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log, int netns = -1);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Waits up to `timeout` for it to end: its wait status, or none if it
  // still runs. Zero timeout only looks.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// A wait status in words ("exited 1", "killed by signal 9").
std::string describe_status(int status);

}  // namespace mayura::testing
