#pragma once
// The signals that stop a program (mayurad's SIGINT and SIGTERM, mayura-run's
// and SIGHUP too), taken on a thread of the program's own. StopSignals blocks
// them in the calling thread, and so in every thread it starts afterwards;
// a SignalWatch reads them from a signalfd on its thread and joins it when it
// goes, whether a signal came or not: declared after what its handler
// touches, it cannot outlive it, and no thread outlives the program's main.

#include <signal.h>

#include <functional>
#include <initializer_list>

#include "mayura/base/unique_fd.hpp"
#include "mayura/runtime.hpp"

namespace mayura::tools {

class StopSignals {
 public:
  // Call before any other thread starts, so that none of them takes a
  // signal meant for this.
  explicit StopSignals(std::initializer_list<int> signals);

 private:
  friend class SignalWatch;
  sigset_t set_{};
  UniqueFd signals_;  // a signalfd of set_
};

class SignalWatch {
 public:
  // Calls `on_signal(signo)`, on the watching thread, for the first of the
  // signals to arrive; later ones are taken and ignored.
  SignalWatch(const StopSignals& signals, std::function<void(int)> on_signal);
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

 private:
  UniqueFd wake_;  // an eventfd: the destructor's word to the thread
  OwnedThread thread_;
};

}  // namespace mayura::tools
