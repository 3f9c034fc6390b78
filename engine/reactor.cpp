#include "reactor.hpp"

#include <string>

#include "sys_error.hpp"

namespace mayura::native {

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
