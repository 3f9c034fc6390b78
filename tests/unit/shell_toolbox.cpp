#include "shell_toolbox.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "mayura/errors.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

std::string busybox_path() { return "/usr/bin/busybox"; }

std::vector<std::string> busybox_applets() {
  std::vector<std::string> applets;
  FILE* p = ::popen((busybox_path() + " --list").c_str(), "r");
  if (!p) return applets;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    std::string name(line);
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
    if (!name.empty()) applets.push_back(name);
  }
  ::pclose(p);
  return applets;
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

std::vector<Toolbox> all_toolboxes() {
  return {{"dash", "/usr/bin/dash", false}, {"bash", "/usr/bin/bash", false}, {"busybox", busybox_path(), true}};
}

ShellPlace::ShellPlace(const Toolbox& toolbox) {
  ::signal(SIGPIPE, SIG_IGN);  // a script that does not read its input
  for (const std::string& program : {toolbox.shell, busybox_path()}) {
    if (!fs::exists(program)) throw std::runtime_error(program + " is missing: run scripts/deps.sh");
  }
  char pattern[] = "/tmp/mayura-shell-XXXXXX";
  if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  root_ = pattern;
  work_ = root_ + "/work";
  const std::string bin = root_ + "/bin";
  fs::create_directories(work_);
  fs::create_directories(bin);
  if (toolbox.busybox_tools) {
    for (const auto& applet : busybox_applets()) fs::create_symlink(busybox_path(), bin + "/" + applet);
    fs::remove(bin + "/sh");
  }
  // busybox runs the applet its name says; as `sh` it is the shell.
  fs::create_symlink(toolbox.shell, bin + "/sh");
  path_ = toolbox.busybox_tools ? bin : bin + ":/usr/local/bin:/usr/bin:/bin";
  shell_ = bin + "/sh";
}

ShellPlace::~ShellPlace() {
  std::error_code ec;
  // The tests make unwritable directories, too.
  for (const auto& e : fs::recursive_directory_iterator(root_, fs::directory_options::skip_permission_denied, ec)) {
    if (e.is_directory(ec) && !e.is_symlink(ec))
      fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(root_, ec);
}

ShellResult ShellPlace::run(const std::string& script, const std::optional<std::string>& stdin,
                            const std::vector<std::string>& env) const {
  return run_with(script, stdin, env, std::nullopt);
}

ShellResult ShellPlace::run_as(uid_t uid, const std::string& script) const {
  fs::permissions(root_, fs::perms::others_exec, fs::perm_options::add);
  if (::chown(work_.c_str(), uid, uid) != 0) throw std::runtime_error("chown of the work directory failed");
  return run_with(script, std::nullopt, {}, uid);
}

// posix_spawn, a vfork underneath, and not fork: under the sanitizers the
// test process is large, and copying its page tables for each of the
// hundreds of commands a large file's upload takes (short command lines)
// cost more than the commands and ran a test past its timeout.
pid_t ShellPlace::start(char* const argv[], char* const envp[], int in, int out, int err) const {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  if (::posix_spawn_file_actions_init(&actions) != 0) throw std::runtime_error("posix_spawn_file_actions_init failed");
  if (::posix_spawnattr_init(&attributes) != 0) {
    ::posix_spawn_file_actions_destroy(&actions);
    throw std::runtime_error("posix_spawnattr_init failed");
  }
  sigset_t none;
  sigemptyset(&none);
  // Each step's error, or the spawn's: the first that failed.
  int error = ::posix_spawn_file_actions_adddup2(&actions, in, 0);
  if (error == 0) error = ::posix_spawn_file_actions_adddup2(&actions, out, 1);
  if (error == 0) error = ::posix_spawn_file_actions_adddup2(&actions, err, 2);
  if (error == 0) error = ::posix_spawn_file_actions_addchdir_np(&actions, work_.c_str());
  if (error == 0) error = ::posix_spawnattr_setsigmask(&attributes, &none);
  if (error == 0) error = ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  if (error == 0) error = ::posix_spawn(&pid, shell_.c_str(), &actions, &attributes, argv, envp);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (error != 0) throw std::runtime_error(std::string("starting the shell: ") + std::strerror(error));
  return pid;
}

// Another user's shell: a fork, for the credentials changed between it and
// exec.
pid_t ShellPlace::start_as(uid_t uid, char* const argv[], char* const envp[], int in, int out, int err) const {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0 || ::geteuid() != uid) ::_exit(122);
    if (::chdir(work_.c_str()) != 0) ::_exit(120);
    ::execve(shell_.c_str(), argv, envp);
    ::_exit(121);
  }
  return pid;
}

ShellResult ShellPlace::run_with(const std::string& script, const std::optional<std::string>& stdin,
                                 const std::vector<std::string>& env, std::optional<uid_t> uid) const {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  // What a failed start would leave open.
  auto close_all = [&] {
    for (int* pipe : {in, out, err})
      for (int i = 0; i < 2; ++i)
        if (pipe[i] >= 0) ::close(pipe[i]);
  };
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) {
    close_all();
    throw std::runtime_error("pipe failed");
  }
  std::vector<std::string> environment{"PATH=" + path_};
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  envp.reserve(environment.size());
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = "sh", arg1 = "-c", arg2 = script;
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};

  pid_t pid = -1;
  try {
    pid = uid ? start_as(*uid, argv, envp.data(), in[0], out[1], err[1])
              : start(argv, envp.data(), in[0], out[1], err[1]);
  } catch (...) {
    close_all();
    throw;
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  const std::string input = stdin.value_or("");
  std::size_t written = 0;
  int in_fd = in[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  } else {
    set_nonblocking(in_fd);
  }
  ShellResult r;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[3] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}, {in_fd, POLLOUT, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (!fds[i].revents) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) (i == 0 ? r.stdout : r.stderr).append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EAGAIN) (i == 0 ? out_open : err_open) = false;
    }
    if (in_fd >= 0 && fds[2].revents) {
      const ssize_t n = ::write(in_fd, input.data() + written, std::min<std::size_t>(input.size() - written, 65536));
      if (n > 0) written += static_cast<std::size_t>(n);
      if (n < 0 || written == input.size()) {
        ::close(in_fd);
        in_fd = -1;
      }
    }
  }
  if (in_fd >= 0) ::close(in_fd);
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::vector<std::string> LocalTransport::command_heads() const {
  std::lock_guard lock(mutex_);
  return heads_;
}

TransportResult LocalTransport::run(const std::string& command, const TransportOptions& options) {
  ++calls_;
  {
    std::lock_guard lock(mutex_);
    heads_.push_back(command.substr(0, 256));
  }
  if (options.cancellation.stop_requested()) throw SandboxError(Reason::CANCELLED, "cancelled");
  if (command.size() > max_command_bytes_) throw SandboxError(Reason::INTERNAL, "command over the transport's bound");
  if (options.stdin && !takes_stdin_) throw SandboxError(Reason::INTERNAL, "stdin given to a transport without it");
  const ShellResult r = place_.run(command, options.stdin);
  {
    std::lock_guard lock(mutex_);
    answers_.push_back(r.stdout.substr(0, r.stdout.find('\n')));
  }
  return {r.exit_code, r.stdout};
}

std::vector<std::string> LocalTransport::answer_heads() const {
  std::lock_guard lock(mutex_);
  return answers_;
}

}  // namespace mayura::testing
