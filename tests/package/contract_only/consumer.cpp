// A provider of one's own on the contract alone: each sandbox is the command
// backend over this host's sh, in a directory of its own. Prints what a
// command in it printed.
#include <mayura/command_backend.hpp>
#include <mayura/sandbox.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

namespace {

// Runs each command with the host's sh in `dir` (stdin not taken: the
// backend sends data inside the command line).
class LocalShell : public mayura::CommandTransport {
 public:
  explicit LocalShell(std::string dir) : dir_(std::move(dir)) {}
  mayura::TransportResult run(const std::string& command, const mayura::TransportOptions&) override {
    const std::string line = "cd '" + dir_ + "' && " + command;
    FILE* out = ::popen(("/bin/sh -c '" + quoted(line) + "'").c_str(), "r");
    if (out == nullptr) throw mayura::SandboxError(mayura::Reason::INTERNAL, "popen failed");
    mayura::TransportResult r;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) r.stdout.append(buf, n);
    const int status = ::pclose(out);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return r;
  }
  bool takes_stdin() const override { return false; }

 private:
  static std::string quoted(const std::string& s) {
    std::string q;
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q;
  }
  std::string dir_;
};

class LocalProvider : public mayura::SandboxProvider {
 public:
  std::string id() const override { return "local-shell"; }
  mayura::Features features() const override {
    mayura::Features f;
    f.network = {mayura::NetworkKind::all};
    return f;
  }
  std::string workdir() const override { return std::filesystem::temp_directory_path().string(); }
  std::int64_t max_lifetime_ms() const override { return 60'000; }
  std::unique_ptr<mayura::SandboxBackend> create(const mayura::CreateOptions&, std::stop_token) override {
    const std::string dir =
        std::filesystem::temp_directory_path().string() + "/contract-consumer-" + std::to_string(++made_);
    std::filesystem::create_directories(dir);
    return mayura::command_sandbox_backend("local-" + std::to_string(made_), std::make_shared<LocalShell>(dir),
                                           [dir] { std::filesystem::remove_all(dir); });
  }

 private:
  int made_ = 0;
};

}  // namespace

int main() {
  mayura::SandboxesOptions options;
  options.network = {mayura::NetworkKind::all};  // a host's own shell reaches what the host does
  const auto sandboxes = mayura::create_sandboxes(std::make_shared<LocalProvider>(), options);
  mayura::CreateOptions create;
  create.network = mayura::Network::all();
  create.lifetime_ms = 60'000;
  const mayura::Sandbox sandbox = sandboxes.create(create);
  std::cout << sandbox.exec({"echo", "contract alone"}).stdout;
  sandbox.release();
  sandboxes.close();
}
