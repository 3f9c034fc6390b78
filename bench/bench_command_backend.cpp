// What one exec of `true` costs through the command backend, over each of
// its transports (one that takes stdin, one that carries everything in
// command lines of at most 32 KiB), beside the native exec it is made of.
// Each transport call is one native exec of `/bin/sh -c COMMAND` in a live
// native sandbox.
//
// usage: bench_command_backend [ITERATIONS]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mayura/command_backend.hpp"
#include "mayura/native.hpp"
#include "mayura/sandbox.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Each command is one exec in the native sandbox.
class NativeTransport final : public mayura::CommandTransport {
 public:
  NativeTransport(mayura::Sandbox native, bool takes_stdin, std::size_t max_command_bytes)
      : native_(std::move(native)), takes_stdin_(takes_stdin), max_command_bytes_(max_command_bytes) {}

  mayura::TransportResult run(const std::string& command, const mayura::TransportOptions& options) override {
    ++calls;
    mayura::ExecOptions o;
    o.stdin = options.stdin;
    o.cancellation = options.cancellation;
    const mayura::ExecResult r = native_.exec({"/bin/sh", "-c", command}, o);
    if (!r.exit_code) throw mayura::SandboxError(mayura::Reason::INTERNAL, "the transport's command did not end");
    return {*r.exit_code, r.stdout};
  }
  bool takes_stdin() const override { return takes_stdin_; }
  std::size_t max_command_bytes() const override { return max_command_bytes_; }

  std::atomic<long> calls{0};

 private:
  mayura::Sandbox native_;
  const bool takes_stdin_;
  const std::size_t max_command_bytes_;
};

// Sandboxes of the command backend, each over one native sandbox.
class CommandOverNative final : public mayura::SandboxProvider {
 public:
  CommandOverNative(mayura::Sandboxes native, bool takes_stdin, std::size_t max_command_bytes)
      : native_(std::move(native)), takes_stdin_(takes_stdin), max_command_bytes_(max_command_bytes) {}

  std::string id() const override { return "command-over-native"; }
  mayura::Features features() const override {
    mayura::Features f;
    f.stdin = true;
    f.network = {mayura::NetworkKind::none};
    return f;
  }
  std::string workdir() const override { return native_.workdir(); }
  std::int64_t max_lifetime_ms() const override { return 0; }

  std::unique_ptr<mayura::SandboxBackend> create(const mayura::CreateOptions& options,
                                                 std::stop_token cancellation) override {
    mayura::CreateOptions native_options;
    native_options.lifetime_ms = options.lifetime_ms;
    mayura::Sandbox native = native_.create(native_options, cancellation);
    last_native = native;
    last_transport = std::make_shared<NativeTransport>(native, takes_stdin_, max_command_bytes_);
    return mayura::command_sandbox_backend(id(), last_transport, [native] { native.release(); });
  }

  mayura::Sandbox last_native;
  std::shared_ptr<NativeTransport> last_transport;

 private:
  mayura::Sandboxes native_;
  const bool takes_stdin_;
  const std::size_t max_command_bytes_;
};

double median(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double ms_of(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::max(5, std::atoi(argv[1])) : 50;
  mayura::SandboxesOptions limits;
  limits.max_sandboxes = 2;
  auto native = mayura::create_sandboxes(mayura::native_sandboxes(), limits);

  std::printf("%d iterations each; exec true, median in ms\n", n);
  struct Transport {
    const char* name;
    bool takes_stdin;
    std::size_t max_command_bytes;
  };
  for (const Transport& t : {Transport{"stdin", true, 64 * 1024}, Transport{"cmdline", false, 32 * 1024}}) {
    auto provider = std::make_shared<CommandOverNative>(native, t.takes_stdin, t.max_command_bytes);
    auto sandboxes = mayura::create_sandboxes(provider, limits);
    mayura::CreateOptions create;
    create.lifetime_ms = 600'000;
    auto s = sandboxes.create(create);
    s.exec({"true"});  // warm up
    provider->last_native.exec({"true"});
    std::vector<double> command, direct;
    const long calls_before = provider->last_transport->calls;
    bool failed = false;
    for (int i = 0; i < n; ++i) {
      command.push_back(ms_of([&] { failed |= s.exec({"true"}).exit_code != 0; }));
      direct.push_back(ms_of([&] { failed |= provider->last_native.exec({"true"}).exit_code != 0; }));
    }
    const double calls = static_cast<double>(provider->last_transport->calls - calls_before) / n;
    std::printf("command backend (%-7s) %9.3f   (%.1f transport calls each)   native exec %9.3f   ratio %.2f%s\n",
                t.name, median(command), calls, median(direct), median(command) / median(direct),
                failed ? "   (some exec failed)" : "");
    sandboxes.close();
  }
  native.close();
  return 0;
}
