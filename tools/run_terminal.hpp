#pragma once
// mayura-run -i and -t, the caller's side: its terminal in raw mode for the
// run (so that every key, ^C too, goes to the command's own terminal in the
// sandbox) and given back as it was on every way out; and its input and
// window size passed on to the running command as they come.

#include <signal.h>
#include <termios.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "mayura/base/unique_fd.hpp"
#include "mayura/runtime.hpp"
#include "mayura/sandbox.hpp"

namespace mayura::tools {

// The size of the terminal on `fd`; none if it is no terminal.
std::optional<TerminalSize> terminal_size(int fd);

// `fd`'s terminal in raw mode (as ssh -t and docker run -t leave it) while
// this lives, when `fd` is a terminal; put back as it was in the
// destructor, and also on a crash (SIGSEGV, SIGABRT and the like), which
// would otherwise leave the caller's shell unusable.
class RawTerminal {
 public:
  explicit RawTerminal(int fd);
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  int fd_ = -1;  // -1: nothing to put back
  termios saved_{};
};

// SIGWINCH taken from a signalfd: made before any other thread starts, as
// StopSignals is, so that no thread takes it instead.
class WindowChanges {
 public:
  WindowChanges();
  int fd() const { return signals_.get(); }

 private:
  UniqueFd signals_;
};

// Passes `input` (when >= 0: read as it comes, its end closing the
// command's input) and the caller's window size (when `windows`: each
// change of `size_from`'s terminal) to the command, from the moment its
// control arrives (start()) until this is destroyed; and holds `raw`'s
// terminal raw for that while (when >= 0), so that until the command
// starts, ^C still stops mayura-run. On a thread of its own.
class InputPump {
 public:
  InputPump(int input, const WindowChanges* windows, int size_from, int raw);
  ~InputPump();
  InputPump(const InputPump&) = delete;
  InputPump& operator=(const InputPump&) = delete;

  // ExecOptions::on_start's: the command has started.
  void start(std::shared_ptr<CommandControl> control);

 private:
  void run(int input, int windows, int size_from, int raw);
  void pump(int input, int windows, int size_from, int raw);
  // False once this is being destroyed.
  bool write_paced(CommandControl& control, const std::string& data);

  UniqueFd wake_;  // an eventfd: the destructor's word to the thread
  std::mutex mutex_;
  std::condition_variable started_;
  std::shared_ptr<CommandControl> control_;
  bool stopping_ = false;
  OwnedThread thread_;
};

}  // namespace mayura::tools
