#pragma once
// Paced output (ExecOptions::on_output) for a consumer that is the caller's
// own thread, or a provider that cannot pace: plain callbacks that hand each
// chunk over and ask for the next at once.

#include "mayura/types.hpp"

namespace mayura::detail {

inline ExecOptions without_pacing(ExecOptions options) {
  if (!options.on_output) return options;
  auto paced = std::make_shared<PacedOutputCallback>(std::move(options.on_output));
  options.on_output = nullptr;
  options.on_stdout = [paced](std::string_view chunk) { (*paced)(OutputStream::out, chunk, [] {}); };
  options.on_stderr = [paced](std::string_view chunk) { (*paced)(OutputStream::err, chunk, [] {}); };
  return options;
}

}  // namespace mayura::detail
