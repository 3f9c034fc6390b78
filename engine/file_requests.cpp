// File requests on the engine side: each is one request to the init with a
// data pipe and a status pipe of its own; the init's helper does the work
// inside the sandbox as its user (engine/init/file_ops.cpp).

#include "file_requests.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "protocol.hpp"
#include "requests.hpp"
#include "sys_error.hpp"

namespace mayura::native::files {
namespace {

// A file request whose helper does not finish within this long fails.
constexpr int kFileTimeoutMs = 120000;

Reason reason_for(int error) {
  switch (error) {
    case ENOENT: return Reason::NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
    case EBUSY: return Reason::PERMISSION_DENIED;
    case EFBIG:
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE: return Reason::LIMIT_REACHED;
    case EISDIR:
    case ENOTDIR:
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
    case ENOTEMPTY:
    case EEXIST: return Reason::INVALID_INPUT;
    default: return Reason::INTERNAL;
  }
}

[[noreturn]] void file_error(const char* what, const std::string& path, int error) {
  std::string message = std::string(what) + " " + path + ": ";
  switch (error) {
    case EFBIG: message += "the file is larger than the limit"; break;
    case EINVAL: message += "not a regular file"; break;
    default: message += std::strerror(error); break;
  }
  throw SandboxError(reason_for(error), message);
}

// Reads one status record (the pipe blocks); false at end of stream (the
// init is gone).
bool read_status(int fd, protocol::Status& status) {
  for (;;) {
    const ssize_t n = ::read(fd, &status, sizeof status);
    if (n == sizeof status) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

enum class Data { none, from_sandbox, to_sandbox };

// One file request: sent with the init's ends of its pipes (then closed here,
// so the helper's end of stream is seen), and waited on with the caller's
// cancellation and a bound.
class FileCall {
 public:
  FileCall(SandboxCore& core, protocol::Request kind, const protocol::FileRequest& request, Data data,
           const std::stop_token& cancellation)
      : core_(core), cancel_(cancellation) {
    UniqueFd init_data;
    if (data == Data::from_sandbox) {
      io::Pipe pipe = io::make_pipe(true, false);
      data_ = std::move(pipe.read);
      init_data = std::move(pipe.write);
    } else if (data == Data::to_sandbox) {
      io::Pipe pipe = io::make_pipe(false, true);
      data_ = std::move(pipe.write);
      init_data = std::move(pipe.read);
    }
    io::Pipe status = io::make_pipe(false, false);
    status_ = std::move(status.read);
    std::vector<int> fds;
    if (init_data) fds.push_back(init_data.get());
    fds.push_back(status.write.get());
    core.send(protocol::encode(kind, request), fds);
  }

  // Everything the helper sends, up to its end (more than `limit` fails).
  std::string receive(std::size_t limit) {
    std::string data;
    char buf[65536];
    for (;;) {
      if (!wait(data_.get(), POLLIN)) continue;
      const ssize_t n = ::read(data_.get(), buf, sizeof buf);
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

  // All of `data`, unless the helper answers first (it failed); then the end
  // of the stream. A short stream (cancellation) makes the helper keep the
  // old file.
  void transmit(std::string_view data) {
    std::size_t written = 0;
    while (written < data.size()) {
      pollfd p[3] = {{data_.get(), POLLOUT, 0}, {cancel_.event.get(), POLLIN, 0}, {status_.get(), POLLIN, 0}};
      check_poll(::poll(p, 3, kFileTimeoutMs), p[1]);
      if (p[2].revents) break;
      if (!p[0].revents) continue;
      const long n = io::write_no_sigpipe(data_.get(), data.data() + written,
                                          std::min<std::size_t>(data.size() - written, 1 << 16));
      if (n > 0) written += static_cast<std::size_t>(n);
      else if (errno != EAGAIN) break;
    }
    data_.reset();
  }

  // The helper's answer; a failure becomes the SandboxError for `what` `path`.
  void finish(const char* what, const std::string& path) {
    while (!wait(status_.get(), POLLIN)) {
    }
    protocol::Status s;
    if (!read_status(status_.get(), s) || s.kind != protocol::Status::done) {
      if (!core_.alive()) core_.gone_once_ended();
      throw SandboxError(Reason::INTERNAL, "the sandbox's file helper failed");
    }
    if (s.value != 0) file_error(what, path, s.value);
  }

 private:
  // True once `fd` is ready; throws at cancellation or the bound.
  bool wait(int fd, short events) {
    pollfd p[2] = {{fd, events, 0}, {cancel_.event.get(), POLLIN, 0}};
    check_poll(::poll(p, 2, kFileTimeoutMs), p[1]);
    return p[0].revents != 0;
  }

  static void check_poll(int ready, const pollfd& cancel) {
    if (ready == 0) throw SandboxError(Reason::INTERNAL, "the sandbox did not finish a file request in time");
    if (ready < 0 && errno != EINTR) fail_step("waiting for a file request", errno);
    if (cancel.revents & POLLIN) cancelled();
  }

  SandboxCore& core_;
  CancelWatch cancel_;
  UniqueFd data_;    // the engine's end
  UniqueFd status_;  // the engine's end
};

FileType type_of(std::uint32_t type) {
  switch (type) {
    case protocol::ListEntry::kFile: return FileType::file;
    case protocol::ListEntry::kDirectory: return FileType::directory;
    case protocol::ListEntry::kSymlink: return FileType::symlink;
    default: return FileType::other;
  }
}

}  // namespace

std::string read(SandboxCore& core, const std::string& absolute, const std::string& path, const ReadOptions& options) {
  const protocol::FileRequest request{absolute, options.max_bytes.value_or(std::size_t{64} << 20)};
  FileCall call(core, protocol::Request::read, request, Data::from_sandbox, options.cancellation);
  std::string data = call.receive(request.max_bytes + 1);
  call.finish("cannot read", path);
  return data;
}

void write(SandboxCore& core, const std::string& absolute, const std::string& path, std::string_view data,
           const FileOptions& options) {
  FileCall call(core, protocol::Request::write, {absolute, data.size()}, Data::to_sandbox, options.cancellation);
  call.transmit(data);
  call.finish("cannot write", path);
}

std::vector<FileEntry> list(SandboxCore& core, const std::string& absolute, const std::string& path,
                            const FileOptions& options) {
  FileCall call(core, protocol::Request::list, {absolute, 0}, Data::from_sandbox, options.cancellation);
  const std::string bytes = call.receive(std::size_t{64} << 20);
  call.finish("cannot list", path);
  std::vector<protocol::ListEntry> raw;
  if (!protocol::decode_listing(bytes, raw)) throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed listing");
  std::vector<FileEntry> entries;
  entries.reserve(raw.size());
  for (auto& e : raw) entries.push_back(FileEntry{std::move(e.name), type_of(e.type), e.size, e.mode, e.mtime_ms});
  return entries;
}

void remove(SandboxCore& core, const std::string& absolute, const std::string& path, const FileOptions& options) {
  FileCall call(core, protocol::Request::remove, {absolute, 0}, Data::none, options.cancellation);
  call.finish("cannot remove", path);
}

}  // namespace mayura::native::files
