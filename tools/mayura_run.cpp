// mayura-run: runs one command in a fresh sandbox and releases it. The main
// of both mayura-run (the light client of mayurad) and mayura-run-local (an
// engine in this process): run_engine.hpp says which does what.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "run_args.hpp"
#include "run_create.hpp"
#include "run_engine.hpp"
#include "run_mcp.hpp"
#include "run_stores.hpp"
#include "run_terminal.hpp"
#include "stop_signals.hpp"
#include "mayura/sandbox.hpp"
#include "mayura/runtime.hpp"

namespace mayura::tools {

void usage_error(const std::string& message) {
  std::fprintf(stderr, "mayura-run: INVALID_INPUT: %s\n(see mayura-run --help)\n", message.c_str());
  std::exit(125);
}

}  // namespace mayura::tools

namespace {

using mayura::tools::Args;
using mayura::tools::kSandboxFailed;
using mayura::tools::kTimedOut;
using mayura::tools::usage_error;

// What --json keeps of each stream of a command stopped at its timeout.
constexpr std::size_t kKept = std::size_t{16} << 20;

// A sandbox file written to a host file; false, said on stderr, when either
// side fails (the run goes on to release the sandbox).
bool copy_out(const mayura::Sandbox& sandbox, const std::string& path, const std::string& host) {
  std::string data;
  try {
    data = sandbox.read_file(path);
  } catch (const mayura::SandboxError& e) {
    std::fprintf(stderr, "mayura-run: --copy-out %s: %s: %s\n", path.c_str(),
                 std::string(mayura::reason_name(e.reason())).c_str(), e.what());
    return false;
  }
  std::ofstream out(host, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "mayura-run: --copy-out %s: cannot write %s\n", path.c_str(), host.c_str());
    return false;
  }
  return true;
}

// The sandbox's disk as the snapshot `name`; none, said on stderr, when it
// fails (the run goes on to release the sandbox).
std::optional<mayura::Snapshot> snapshot_to(const mayura::Sandbox& sandbox, const std::string& name) {
  try {
    return sandbox.snapshot(name);
  } catch (const mayura::SandboxError& e) {
    std::fprintf(stderr, "mayura-run: --snapshot-to %s: %s: %s\n", name.c_str(),
                 std::string(mayura::reason_name(e.reason())).c_str(), e.what());
    return std::nullopt;
  }
}

void write_screenshot(const mayura::Sandbox& sandbox, const std::string& file, const std::stop_token& stop) {
  mayura::ScreenshotOptions o;
  o.cancellation = stop;
  const std::string png = sandbox.screenshot(o);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(png.data(), static_cast<std::streamsize>(png.size()));
  out.close();
  if (!out) throw mayura::SandboxError(mayura::Reason::INVALID_INPUT, "cannot write the screenshot to " + file);
}

// The command, and the screenshot --screenshot asks for: when the command
// ends, or at --timeout while it still runs (a GUI program's window is gone
// once it is stopped), and then it is stopped as a timeout stops it.
mayura::ExecResult exec_with_screenshot(const mayura::Sandbox& sandbox, const Args& args, mayura::ExecOptions exec,
                                        const std::stop_source& stop) {
  if (args.screenshot.empty()) return sandbox.exec(args.command, exec);
  if (!args.timeout_ms) {
    mayura::ExecResult r = sandbox.exec(args.command, exec);
    write_screenshot(sandbox, args.screenshot, stop.get_token());
    return r;
  }
  // The command is stopped by cancelling it, which gives no result: what
  // --json prints of its output is kept here as it comes.
  std::string kept_out, kept_err;
  bool clipped = false;
  if (args.json) {
    const auto keep = [&clipped](std::string& into, std::string_view chunk) {
      const std::size_t room = kKept - std::min(kKept, into.size());
      if (chunk.size() > room) clipped = true;
      into.append(chunk.substr(0, room));
    };
    exec.on_stdout = [&keep, &kept_out](std::string_view c) { keep(kept_out, c); };
    exec.on_stderr = [&keep, &kept_err](std::string_view c) { keep(kept_err, c); };
  }
  const auto started = std::chrono::steady_clock::now();
  std::stop_source command_stop;
  const std::stop_callback forward(stop.get_token(), [&command_stop] { command_stop.request_stop(); });
  exec.timeout_ms.reset();
  exec.cancellation = command_stop.get_token();
  std::mutex mutex;
  std::condition_variable ended;
  bool done = false;
  std::atomic<bool> shot{false};
  std::exception_ptr shot_failed;
  mayura::OwnedThread timer("mayura-run-time", [&] {
    std::unique_lock lock(mutex);
    if (ended.wait_for(lock, std::chrono::milliseconds(*args.timeout_ms), [&] { return done; })) return;
    lock.unlock();
    try {
      write_screenshot(sandbox, args.screenshot, stop.get_token());
    } catch (...) {
      shot_failed = std::current_exception();
    }
    shot = true;
    command_stop.request_stop();
  });
  const auto finish = [&] {
    {
      const std::lock_guard lock(mutex);
      done = true;
    }
    ended.notify_all();
    timer.join();
  };
  mayura::ExecResult r;
  try {
    r = sandbox.exec(args.command, exec);
  } catch (const mayura::SandboxError& e) {
    finish();
    if (!shot || e.reason() != mayura::Reason::CANCELLED || stop.stop_requested()) throw;
    if (shot_failed) std::rethrow_exception(shot_failed);
    mayura::ExecResult timed_out;
    timed_out.timed_out = true;
    timed_out.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    timed_out.stdout = std::move(kept_out);
    timed_out.stderr = std::move(kept_err);
    timed_out.truncated = clipped;
    return timed_out;
  } catch (...) {
    finish();
    throw;
  }
  finish();
  if (shot_failed) std::rethrow_exception(shot_failed);
  if (!shot) write_screenshot(sandbox, args.screenshot, stop.get_token());
  return r;
}

// The command, with -i's input and -t's terminal: the caller's terminal is
// raw only while the command runs (what was said before, and any failure
// after, reads as usual; until it starts, ^C stops mayura-run), and its
// input and window size follow the command from its start to its end.
mayura::ExecResult interactive_exec(const mayura::Sandbox& sandbox, const Args& args, mayura::ExecOptions exec,
                                    const mayura::tools::WindowChanges* windows, const std::stop_source& stop) {
  if (!args.interactive && !args.tty) return exec_with_screenshot(sandbox, args, std::move(exec), stop);
  // The size of the caller's terminal: its input's, else its output's.
  const int size_from = mayura::tools::terminal_size(0) ? 0 : 1;
  if (args.tty) exec.terminal = mayura::tools::terminal_size(size_from).value_or(mayura::TerminalSize{});
  mayura::tools::InputPump pump(args.interactive ? 0 : -1, args.tty ? windows : nullptr, size_from,
                                args.tty && args.interactive ? 0 : -1);
  exec.on_start = [&pump](std::shared_ptr<mayura::CommandControl> control) { pump.start(std::move(control)); };
  return exec_with_screenshot(sandbox, args, std::move(exec), stop);
}

// A file --screenshot or --copy-out cannot write is bad input before
// anything is made (checked without making it: a run that fails leaves no
// empty file).
void check_writable(const std::string& option, const std::string& file) {
  const auto slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : file.substr(0, slash);
  const bool ok =
      ::access(file.c_str(), F_OK) == 0 ? ::access(file.c_str(), W_OK) == 0 : ::access(dir.c_str(), W_OK | X_OK) == 0;
  if (!ok) usage_error(option + " " + file + ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  mayura::tools::keep_command_line(argv);
  if (argc >= 2 && std::string(argv[1]) == "image") return mayura::tools::run_image_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "snapshot") return mayura::tools::run_snapshot_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "volume") return mayura::tools::run_volume_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "mcp") return mayura::tools::run_mcp_command(argc - 1, argv + 1);
  Args args = mayura::tools::parse_run_args(argc, argv);
  if (!args.screenshot.empty()) check_writable("--screenshot", args.screenshot);
  for (const auto& [path, host] : args.copy_out) check_writable("--copy-out", host);

  // -t follows the caller's window; SIGWINCH is blocked, as the stop
  // signals are, before any thread starts.
  std::optional<mayura::tools::WindowChanges> windows;
  if (args.tty) windows.emplace();
  // SIGINT, SIGTERM and SIGHUP cancel the command and release the sandbox.
  const mayura::tools::StopSignals stop_signals({SIGINT, SIGTERM, SIGHUP});
  std::stop_source stop;
  const mayura::tools::SignalWatch on_stop(stop_signals, [&stop](int) { stop.request_stop(); });

  std::optional<mayura::Sandbox> sandbox;
  std::string daemon;  // the daemon the run goes through; empty: none
  // Output to a closed pipe fails with EPIPE instead of killing mayura-run
  // before it released the sandbox.
  ::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> reader_gone{false};
  try {
    // First, before any input is read, since the client may hand the whole
    // run over to mayura-run-local in either: before anything is made, an
    // image with no command of its own is bad input; then the engine.
    if (args.command.empty()) args.command = mayura::tools::image_default_command(args.image);
    const auto engine = mayura::tools::choose_engine(args.local);
    daemon = engine.daemon;

    std::string input;
    if (args.stdin_on) input.assign(std::istreambuf_iterator<char>(std::cin), {});
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& [host, path] : args.copy_in) files.emplace_back(path, mayura::tools::read_host_file(host));
    std::optional<std::string> profile;
    if (args.seccomp_file) profile = mayura::tools::read_host_file(*args.seccomp_file);

    mayura::CreateOptions create = mayura::tools::create_options(args, std::move(profile));

    mayura::ExecOptions exec;
    exec.cwd = args.cwd;
    exec.env = args.env;
    exec.timeout_ms = args.timeout_ms;
    exec.cancellation = stop.get_token();
    if (args.stdin_on) exec.stdin = std::move(input);
    if (!args.json) {
      // A reader that went away (`mayura-run -- yes | head -1`) ends the
      // command, as SIGPIPE would a pipeline's writer; the sandbox is then
      // released as after any cancellation.
      exec.on_stdout = [&stop, &reader_gone](std::string_view c) {
        if (!reader_gone && !mayura::tools::write_out(1, c)) {
          reader_gone = true;
          stop.request_stop();
        }
      };
      exec.on_stderr = [](std::string_view c) { mayura::tools::write_out(2, c); };
      exec.max_output_bytes = 1;  // streamed already; keep nothing
    }

    mayura::ExecResult result;
    bool copied_out = true;
    std::optional<mayura::Snapshot> taken;  // --snapshot-to's
    if (engine.run && !args.interactive && !args.tty && files.empty() && args.copy_out.empty() && args.ports.empty() &&
        !args.desktop && !args.snapshot_to) {
      // Nothing to do between the create and the command, nor after it: one
      // request, checked by the daemon as the limits layer here would.
      // Without --lifetime, the daemon's maximum bounds the command (its
      // sandbox ends with it).
      if (!args.lifetime_given) create.lifetime_ms = 0;
      result = engine.run(create, args.command, exec);
    } else {
      const auto provider = engine.provider();
      auto sandboxes = mayura::tools::run_sandboxes(provider, daemon, args, create);
      const std::string where = mayura::tools::engine_name(daemon);
      if (args.interactive && !sandboxes.features().interactive) {
        throw mayura::SandboxError(mayura::Reason::INVALID_INPUT,
                                   "-i: " + where + " cannot stream input to a running command");
      }
      if (args.tty && !sandboxes.features().terminal) {
        throw mayura::SandboxError(mayura::Reason::INVALID_INPUT, "-t: " + where + " gives no terminals");
      }
      sandbox = sandboxes.create(create, stop.get_token());
      for (const auto& [path, data] : files) sandbox->write_file(path, data);
      for (int port : args.ports) {
        std::fprintf(stderr, "mayura-run: port %d is at %s\n", port, sandbox->url(port).c_str());
      }
      result = interactive_exec(*sandbox, args, exec, windows ? &*windows : nullptr, stop);
      for (const auto& [path, host] : args.copy_out) copied_out = copy_out(*sandbox, path, host) && copied_out;
      if (args.snapshot_to) taken = snapshot_to(*sandbox, *args.snapshot_to);
      sandbox->release();
    }

    if (args.json) {
      nlohmann::json j;
      j["exitCode"] = result.exit_code ? nlohmann::json(*result.exit_code) : nlohmann::json(nullptr);
      j["stdout"] = result.stdout;
      j["stderr"] = result.stderr;
      j["truncated"] = result.truncated;
      j["durationMs"] = result.duration_ms;
      j["timedOut"] = result.timed_out;
      j["oomKilled"] = result.oom_killed;
      if (args.snapshot_to) j["snapshot"] = taken ? mayura::tools::snapshot_json(*taken) : nlohmann::json(nullptr);
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    }
    if (!copied_out || (args.snapshot_to && !taken)) return kSandboxFailed;
    if (result.timed_out) return kTimedOut;
    return *result.exit_code;
  } catch (const mayura::SandboxError& e) {
    if (sandbox) sandbox->release();
    // The shell's answer for a writer whose reader went away: 128 + SIGPIPE.
    if (reader_gone && e.reason() == mayura::Reason::CANCELLED) return 128 + SIGPIPE;
    std::string hint;
    if (!daemon.empty() && e.reason() == mayura::Reason::PERMISSION_DENIED &&
        args.image.find('/') != std::string::npos) {
      hint = " (a daemon takes images by name only; --local runs a directory image)";
    } else if (e.reason() == mayura::Reason::NOT_FOUND &&
               std::string_view(e.what()).find("no snapshot") != std::string_view::npos) {
      hint = " (mayura-run snapshot list shows the snapshots there are)";
    } else if (e.reason() == mayura::Reason::NOT_FOUND &&
               std::string_view(e.what()).find("no volume") != std::string_view::npos) {
      hint = " (mayura-run volume list shows the volumes there are; volume create makes one)";
    }
    std::fprintf(stderr, "mayura-run: %s: %s%s\n", std::string(mayura::reason_name(e.reason())).c_str(), e.what(),
                 hint.c_str());
    return kSandboxFailed;
  } catch (const std::exception& e) {
    if (sandbox) sandbox->release();
    std::fprintf(stderr, "mayura-run: INTERNAL: %s\n", e.what());
    return kSandboxFailed;
  }
}
