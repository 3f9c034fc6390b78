#pragma once
// Where mayura-run's sandbox comes from: a mayurad (named by MAYURA_HOST, or
// its default socket when that answers), or an engine in this process.

#include <functional>
#include <memory>
#include <string>

#include "mayura/native.hpp"
#include "mayura/provider.hpp"

namespace mayura::tools {

inline constexpr const char* kDefaultDaemonSocket = "/run/mayura/mayurad.sock";

struct RunEngine {
  std::shared_ptr<SandboxProvider> provider;
  std::string daemon;  // the daemon's address; empty: an engine in this process
};

// `local` forces an engine in this process, made with `native_options()`.
// A daemon that MAYURA_HOST names and that does not answer is a failure
// (INTERNAL naming it), never a silent fall back; a default socket that
// nobody listens on (left by a daemon that died) is.
RunEngine choose_engine(bool local, const std::function<NativeOptions()>& native_options);

// One line for `mayura-run doctor`: which engine a run would use.
std::string describe_engine_choice(bool local);

}  // namespace mayura::tools
