// File requests on the engine side: each is one request to the init with a
// data pipe and a status pipe of its own; the init's helper does the work
// inside the sandbox as its user (engine/init/file_ops.cpp).

#include "file_requests.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "requests.hpp"
#include "sys_error.hpp"

namespace mayura::native::files {
namespace {

// A file request whose helper does not finish within this long fails.
constexpr int kFileTimeoutMs = 120000;

// A file request's common shape: send it with its pipes, move the data,
// read the answer.
struct FileCall {
  io::Pipe data;
  io::Pipe status = io::make_pipe(false, false);
};

// Waits for the status record, honouring cancellation; GONE if the init died.
[[noreturn]] void file_timeout() {
  throw SandboxError(Reason::INTERNAL, "the sandbox did not finish a file request in time");
}

protocol::Status wait_done(SandboxCore& core, int status_fd, const std::stop_token& token) {
  CancelWatch cancel(token);
  for (;;) {
    pollfd p[2] = {{status_fd, POLLIN, 0}, {cancel.event.get(), POLLIN, 0}};
    const int r = ::poll(p, 2, kFileTimeoutMs);
    if (r == 0) file_timeout();
    if (r < 0 && errno != EINTR) fail_step("waiting for a file request", errno);
    if (p[1].revents & POLLIN) cancelled();
    if (p[0].revents) {
      protocol::Status s;
      if (!read_status(status_fd, s) || s.kind != protocol::Status::done) {
        if (!core.alive()) core.gone_once_ended();
        throw SandboxError(Reason::INTERNAL, "the sandbox's file helper failed");
      }
      return s;
    }
  }
}

// Reads the data pipe to its end (bounded), honouring cancellation.
std::string read_data(int fd, std::size_t limit, const std::stop_token& token) {
  CancelWatch cancel(token);
  std::string data;
  char buf[65536];
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {cancel.event.get(), POLLIN, 0}};
    const int r = ::poll(p, 2, kFileTimeoutMs);
    if (r == 0) file_timeout();
    if (r < 0 && errno != EINTR) fail_step("reading from the sandbox", errno);
    if (p[1].revents & POLLIN) cancelled();
    if (!p[0].revents) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      fail_step("reading from the sandbox", errno);
    }
    if (data.size() + static_cast<std::size_t>(n) > limit) {
      throw SandboxError(Reason::LIMIT_REACHED, "the answer is larger than the limit");
    }
    data.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string read(SandboxCore& core, const std::string& absolute, const std::string& path, const ReadOptions& options) {
  FileCall call;
  call.data = io::make_pipe(true, false);
  protocol::FileRequest request{absolute, options.max_bytes.value_or(std::size_t{64} << 20)};
  core.send(protocol::encode(protocol::Request::read, request), {call.data.write.get(), call.status.write.get()});
  call.data.write.reset();
  call.status.write.reset();
  std::string data = read_data(call.data.read.get(), request.max_bytes + 1, options.cancellation);
  const protocol::Status s = wait_done(core, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot read", path, s.value);
  return data;
}

void write(SandboxCore& core, const std::string& absolute, const std::string& path, std::string_view data,
           const FileOptions& options) {
  FileCall call;
  call.data = io::make_pipe(false, true);
  protocol::FileRequest request{absolute, data.size()};
  core.send(protocol::encode(protocol::Request::write, request), {call.data.read.get(), call.status.write.get()});
  call.data.read.reset();
  call.status.write.reset();
  {
    CancelWatch cancel(options.cancellation);
    std::size_t written = 0;
    while (written < data.size()) {
      pollfd p[3] = {{call.data.write.get(), POLLOUT, 0}, {cancel.event.get(), POLLIN, 0}, {call.status.read.get(), POLLIN, 0}};
      const int r = ::poll(p, 3, kFileTimeoutMs);
      if (r == 0) file_timeout();
      if (r < 0 && errno != EINTR) fail_step("writing to the sandbox", errno);
      if (p[1].revents & POLLIN) cancelled();  // the helper sees a short write and keeps the old file
      if (p[2].revents) break;                 // the helper answered early: it failed
      if (!p[0].revents) continue;
      const long n = io::write_no_sigpipe(call.data.write.get(), data.data() + written, std::min<std::size_t>(data.size() - written, 1 << 16));
      if (n > 0) written += static_cast<std::size_t>(n);
      else if (errno != EAGAIN) break;
    }
    call.data.write.reset();
  }
  const protocol::Status s = wait_done(core, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot write", path, s.value);
}

std::vector<FileEntry> list(SandboxCore& core, const std::string& absolute, const std::string& path,
                            const FileOptions& options) {
  FileCall call;
  call.data = io::make_pipe(true, false);
  protocol::FileRequest request{absolute, 0};
  core.send(protocol::encode(protocol::Request::list, request), {call.data.write.get(), call.status.write.get()});
  call.data.write.reset();
  call.status.write.reset();
  const std::string bytes = read_data(call.data.read.get(), std::size_t{64} << 20, options.cancellation);
  const protocol::Status s = wait_done(core, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot list", path, s.value);
  std::vector<protocol::ListEntry> raw;
  if (!protocol::decode_listing(bytes, raw)) throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed listing");
  std::vector<FileEntry> entries;
  entries.reserve(raw.size());
  for (auto& e : raw) {
    FileEntry f;
    f.name = std::move(e.name);
    f.type = e.type == 0 ? FileType::file : e.type == 1 ? FileType::directory : e.type == 2 ? FileType::symlink : FileType::other;
    f.size = e.size;
    f.mode = e.mode;
    f.mtime_ms = e.mtime_ms;
    entries.push_back(std::move(f));
  }
  return entries;
}

void remove(SandboxCore& core, const std::string& absolute, const std::string& path, const FileOptions& options) {
  FileCall call;
  protocol::FileRequest request{absolute, 0};
  core.send(protocol::encode(protocol::Request::remove, request), {call.status.write.get()});
  call.status.write.reset();
  const protocol::Status s = wait_done(core, call.status.read.get(), options.cancellation);
  if (s.value != 0) file_error("cannot remove", path, s.value);
}

}  // namespace mayura::native::files
