#include "command_channel.hpp"

#include <algorithm>

#include "mayura/base/base64.hpp"
#include "mayura/errors.hpp"
#include "mayura/sandbox_scripts.hpp"

namespace mayura::detail {

CommandChannel::CommandChannel(std::shared_ptr<CommandTransport> transport)
    : transport_(std::move(transport)),
      takes_stdin_(transport_->takes_stdin()),
      max_command_bytes_(transport_->max_command_bytes()) {}

bool CommandChannel::close() noexcept { return !closed_.exchange(true); }

bool CommandChannel::usable() const noexcept { return !closed_.load() && !gone_.load(); }

TransportResult CommandChannel::run(const std::string& script, const std::optional<std::string>& stdin,
                                    std::stop_token cancellation) {
  if (closed_.load()) throw SandboxError(Reason::GONE, "the sandbox was released");
  if (gone_.load()) throw SandboxError(Reason::GONE, "the sandbox is gone");
  check_fits(script);
  TransportResult result;
  try {
    result = transport_->run(script, TransportOptions{stdin, std::move(cancellation)});
  } catch (const SandboxError& e) {
    if (e.reason() == Reason::GONE) gone_.store(true);
    if (closed_.load()) throw SandboxError(Reason::GONE, "the sandbox was released");
    throw;
  }
  // Released while the script ran: the release may have killed it midway,
  // and what it printed is no answer to read.
  if (closed_.load()) throw SandboxError(Reason::GONE, "the sandbox was released");
  return result;
}

TransportResult CommandChannel::run_all(const std::vector<Fragment>& fragments, std::stop_token cancellation) {
  TransportResult last;
  std::string script;
  std::optional<std::string> stdin;
  auto flush = [&] {
    if (script.empty()) return true;
    last = run(script, stdin, cancellation);
    script.clear();
    stdin.reset();
    return last.exit_code == 0;
  };
  for (const Fragment& f : fragments) {
    // One standard input per command: a second fragment reading it starts
    // the next command.
    if ((f.stdin && stdin) || !fits(script + f.text)) {
      if (!flush()) return last;
    }
    script += f.text;
    if (f.stdin) stdin = f.stdin;
  }
  flush();
  return last;
}

std::vector<Fragment> CommandChannel::upload(std::string_view path, std::string_view data) const {
  using sandbox_scripts::WriteMode;
  std::vector<Fragment> fragments;
  if (takes_stdin_) {
    std::size_t at = 0;
    do {
      const std::string_view chunk = data.substr(at, kChunkBytes);
      fragments.push_back({sandbox_scripts::write_chunk(path, at == 0 ? WriteMode::truncate : WriteMode::append),
                           base64_encode(chunk)});
      at += chunk.size();
    } while (at < data.size());
    return fragments;
  }
  // The chunk that fills a command beside the script around it: base64
  // takes 4 bytes for every 3.
  const std::size_t around = sandbox_scripts::write_chunk(path, WriteMode::append, "").size();
  const std::size_t room = max_command_bytes_ > around ? (max_command_bytes_ - around) / 4 * 3 : 0;
  if (room == 0) throw SandboxError(Reason::INTERNAL, "the transport's commands are too short to carry data");
  const std::size_t step = std::min(room, kChunkBytes);
  std::size_t at = 0;
  do {
    const std::string_view chunk = data.substr(at, step);
    fragments.push_back(
        {sandbox_scripts::write_chunk(path, at == 0 ? WriteMode::truncate : WriteMode::append, base64_encode(chunk)),
         std::nullopt});
    at += chunk.size();
  } while (at < data.size());
  return fragments;
}

void CommandChannel::check_fits(const std::string& script) const {
  if (!fits(script)) {
    throw SandboxError(Reason::INTERNAL,
                       "a command of " + std::to_string(script.size()) + " bytes is longer than the transport takes");
  }
}

std::string decode_base64(std::string_view text) {
  auto bytes = base64_decode(text);
  if (!bytes) throw SandboxError(Reason::INTERNAL, "the sandbox sent malformed base64");
  return std::move(*bytes);
}

}  // namespace mayura::detail
