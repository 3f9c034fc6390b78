// File requests on the engine side: each is one request to the init with a
// data pipe and a status pipe of its own; the init's helper does the work
// inside the sandbox as its user (engine/init/file_ops.cpp).

#include "file_requests.hpp"

#include <unistd.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "protocol.hpp"
#include "reactor.hpp"
#include "requests.hpp"
#include "sys_error.hpp"

namespace mayura::native::files {
namespace {

namespace asio = boost::asio;

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

enum class Data { none, from_sandbox, to_sandbox };

// One file request: sent with the init's ends of its pipes (then closed here,
// so the helper's end of stream is seen), then a state machine on Asio that
// takes what the helper sends (or sends it what is written), and its status,
// under the caller's cancellation and a bound on each wait.
class FileCall : public std::enable_shared_from_this<FileCall> {
 public:
  FileCall(std::shared_ptr<SandboxCore> core, FileOp op, std::stop_token cancellation,
           const asio::any_io_executor& executor, FileDone done)
      : core_(std::move(core)),
        op_(std::move(op)),
        cancellation_(std::move(cancellation)),
        strand_(asio::make_strand(executor)),
        data_(strand_),
        status_(strand_),
        timer_(strand_),
        done_(std::move(done)) {}

  void start() {
    const Data data = op_.kind == protocol::Request::read || op_.kind == protocol::Request::list ? Data::from_sandbox
                      : op_.kind == protocol::Request::write                                     ? Data::to_sandbox
                                                                                                 : Data::none;
    UniqueFd init_data;
    if (data == Data::from_sandbox) {
      io::Pipe pipe = io::make_pipe(true, false);
      watch_fd(data_, pipe.read, "watching the file's data");
      init_data = std::move(pipe.write);
    } else if (data == Data::to_sandbox) {
      io::Pipe pipe = io::make_pipe(false, true);
      watch_fd(data_, pipe.write, "watching the file's data");
      init_data = std::move(pipe.read);
    }
    io::Pipe status = io::make_pipe(true, false);
    watch_fd(status_, status.read, "watching the file request's status");
    std::vector<int> fds;
    if (init_data) fds.push_back(init_data.get());
    fds.push_back(status.write.get());
    // (a list and a remove are bounded by the engine alone)
    const std::size_t bound = op_.kind == protocol::Request::write  ? op_.data.size()
                              : op_.kind == protocol::Request::read ? op_.max_bytes
                                                                    : 0;
    const protocol::FileRequest request{op_.absolute, bound};
    core_->send(protocol::encode(op_.kind, request), fds);
    asio::dispatch(strand_, [self = shared_from_this(), data] { self->begin(data); });
  }

 private:
  void on_cancel() { fail(std::make_exception_ptr(SandboxError(Reason::CANCELLED, "the operation was cancelled"))); }

  void begin(Data data) {
    if (cancellation_.stop_possible()) cancel_watch_.emplace(cancellation_, Wake{weak_from_this(), strand_});
    if (data == Data::from_sandbox) receive();
    else if (data == Data::to_sandbox) transmit();
    else watch_status();
    if (data == Data::to_sandbox) watch_status();  // an early answer ends the transfer
  }

  // A wait that sees nothing for this long fails the call.
  void arm_timer() {
    timer_.expires_after(std::chrono::milliseconds(kFileTimeoutMs));
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec)
        self->fail(std::make_exception_ptr(
            SandboxError(Reason::INTERNAL, "the sandbox did not finish a file request in time")));
    });
  }

  // Everything the helper sends, up to its end (more than the limit fails).
  void receive() {
    arm_timer();
    data_.async_wait(asio::posix::descriptor_base::wait_read,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       if (!ec) self->on_data();
                     });
  }

  void on_data() {
    if (finished_) return;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(data_.native_handle(), buf, sizeof buf);
      if (n == 0) {
        boost::system::error_code ignored;
        data_.close(ignored);
        return watch_status();
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return receive();
        return fail(std::make_exception_ptr(step_error("reading from the sandbox", errno)));
      }
      // (a read takes one byte more than its bound, to tell a file of
      // exactly that size from a larger one)
      const std::size_t limit = op_.kind == protocol::Request::read ? op_.max_bytes + 1 : op_.max_bytes;
      if (received_.size() + static_cast<std::size_t>(n) > limit) {
        return fail(
            std::make_exception_ptr(SandboxError(Reason::LIMIT_REACHED, "the answer is larger than the limit")));
      }
      received_.append(buf, static_cast<std::size_t>(n));
    }
  }

  // All of the data, unless the helper answers first (it failed); then the
  // end of the stream. A short stream (cancellation) makes the helper keep
  // the old file.
  void transmit() {
    if (written_ >= op_.data.size()) {
      boost::system::error_code ignored;
      data_.close(ignored);
      return arm_timer();  // for the answer
    }
    arm_timer();
    data_.async_wait(asio::posix::descriptor_base::wait_write,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       if (!ec) self->on_writable();
                     });
  }

  void on_writable() {
    if (finished_ || !data_.is_open()) return;
    const long n = io::write_no_sigpipe(data_.native_handle(), op_.data.data() + written_,
                                        std::min<std::size_t>(op_.data.size() - written_, 1 << 16));
    if (n > 0) {
      written_ += static_cast<std::size_t>(n);
    } else if (errno != EAGAIN) {
      written_ = op_.data.size();  // the helper stopped reading: its status says why
    }
    transmit();
  }

  void watch_status() {
    if (watching_status_) return;
    watching_status_ = true;
    if (!data_.is_open()) arm_timer();
    status_.async_wait(asio::posix::descriptor_base::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (!ec) self->on_status();
                       });
  }

  // The helper's answer; a failure becomes the SandboxError for the call.
  void on_status() {
    if (finished_) return;
    protocol::Status s;
    ssize_t n;
    do {
      n = ::read(status_.native_handle(), &s, sizeof s);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) {
      watching_status_ = false;
      return watch_status();
    }
    if (n != sizeof s || s.kind != protocol::Status::done) {
      std::exception_ptr error;
      try {
        if (!core_->alive()) core_->gone_once_ended();
        throw SandboxError(Reason::INTERNAL, "the sandbox's file helper failed");
      } catch (...) {
        error = std::current_exception();
      }
      return fail(error);
    }
    if (s.value != 0) {
      try {
        file_error(op_.what, op_.path, s.value);
      } catch (...) {
        return fail(std::current_exception());
      }
    }
    // A write's data may still be under way when the helper has answered:
    // the answer is what counts.
    complete({}, std::move(received_));
  }

  void fail(std::exception_ptr error) { complete(std::move(error), {}); }

  void complete(std::exception_ptr error, std::string data) {
    if (finished_) return;
    finished_ = true;
    cancel_watch_.reset();
    boost::system::error_code ignored;
    data_.close(ignored);
    status_.close(ignored);
    timer_.cancel();
    FileDone done = std::move(done_);
    done(std::move(error), std::move(data));
  }

  static SandboxError step_error(const char* step, int error) {
    try {
      fail_step(step, error);
    } catch (const SandboxError& e) {
      return e;
    }
    return SandboxError(Reason::INTERNAL, step);
  }

  std::shared_ptr<SandboxCore> core_;
  FileOp op_;
  std::stop_token cancellation_;
  asio::strand<asio::any_io_executor> strand_;
  asio::posix::stream_descriptor data_;    // the engine's end
  asio::posix::stream_descriptor status_;  // the engine's end
  asio::steady_timer timer_;
  using Wake = StopOnStrand<FileCall, &FileCall::on_cancel>;  // a stop, from any thread, to the strand
  std::optional<std::stop_callback<Wake>> cancel_watch_;
  FileDone done_;
  std::string received_;
  std::size_t written_ = 0;
  bool watching_status_ = false;
  bool finished_ = false;
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

void start_file_call(std::shared_ptr<SandboxCore> core, FileOp op, std::stop_token cancellation,
                     const asio::any_io_executor& executor, FileDone done) {
  std::make_shared<FileCall>(std::move(core), std::move(op), std::move(cancellation), executor, std::move(done))
      ->start();
}

std::string run_file_call(std::shared_ptr<SandboxCore> core, FileOp op, std::stop_token cancellation) {
  asio::io_context context(1);
  std::exception_ptr error;
  std::string data;
  start_file_call(std::move(core), std::move(op), std::move(cancellation), context.get_executor(),
                  [&](std::exception_ptr e, std::string d) {
                    error = std::move(e);
                    data = std::move(d);
                  });
  context.run();
  if (error) std::rethrow_exception(error);
  return data;
}

FileOp read_op(const std::string& absolute, const std::string& path, const ReadOptions& options) {
  return {
      protocol::Request::read, absolute, path, "cannot read", options.max_bytes.value_or(std::size_t{64} << 20), {}};
}
FileOp write_op(const std::string& absolute, const std::string& path, std::string data) {
  return {protocol::Request::write, absolute, path, "cannot write", 0, std::move(data)};
}
FileOp list_op(const std::string& absolute, const std::string& path) {
  return {protocol::Request::list, absolute, path, "cannot list", std::size_t{64} << 20, {}};
}
FileOp remove_op(const std::string& absolute, const std::string& path) {
  return {protocol::Request::remove, absolute, path, "cannot remove", 0, {}};
}

std::vector<FileEntry> decode_list(const std::string& bytes) {
  std::vector<protocol::ListEntry> raw;
  if (!protocol::decode_listing(bytes, raw))
    throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed listing");
  std::vector<FileEntry> entries;
  entries.reserve(raw.size());
  for (auto& e : raw) entries.push_back(FileEntry{std::move(e.name), type_of(e.type), e.size, e.mode, e.mtime_ms});
  return entries;
}

}  // namespace mayura::native::files
