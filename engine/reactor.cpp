#include "reactor.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "sys_error.hpp"

namespace mayura::native {
namespace {

struct Reactor {
  boost::asio::io_context context;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
  std::size_t threads = std::max(2u, std::thread::hardware_concurrency());

  Reactor() {
    for (std::size_t i = 0; i < threads; ++i) {
      // A command's handlers never throw out of run() (each run ends in its
      // completion); should one, the thread goes back to waiting.
      std::thread([this] {
        for (;;) {
          try {
            context.run();
            return;
          } catch (...) {
          }
        }
      }).detach();
    }
  }
};

// Never destroyed: a command may still complete while the process exits, and
// its threads must not meet a destroyed io_context.
Reactor& reactor() {
  static Reactor* r = new Reactor();
  return *r;
}

}  // namespace

boost::asio::any_io_executor reactor_executor() { return reactor().context.get_executor(); }

std::size_t reactor_threads() { return reactor().threads; }

void watch_fd(boost::asio::posix::stream_descriptor& stream, UniqueFd& fd, const char* step) {
  boost::system::error_code ec;
  stream.assign(fd.get(), ec);
  if (!ec) {
    fd.release();  // the stream owns it now
    return;
  }
  const std::string what = std::string(step) + " (epoll_ctl)";
  if (ec.value() == ENOSPC) {
    throw SandboxError(Reason::LIMIT_REACHED,
                       "the host's epoll watch limit (fs.epoll.max_user_watches) is reached: " + what);
  }
  fail_step(what, ec.value());
}

}  // namespace mayura::native
