#include "mayura/netfilter/io_thread.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>

#include "mayura/errors.hpp"

namespace mayura::netfilter {

namespace asio = boost::asio;

IoThread::IoThread()
    : work_(asio::make_work_guard(io_)), thread_([this] {
        // splice(2) into a socket whose peer reset raises SIGPIPE, which
        // would end the whole host process: on this thread it stays blocked
        // (a blocked thread-directed signal only stays pending), and the
        // call fails EPIPE as it should.
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
        io_.run();
      }) {}

IoThread::~IoThread() {
  work_.reset();
  io_.stop();
  thread_.join();
}

int socket_in(int netns, int domain, int type) noexcept {
  const int home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0) return -1;
  int fd = -1;
  int error = 0;
  if (::setns(netns, CLONE_NEWNET) != 0) {
    error = errno;
  } else {
    fd = ::socket(domain, type | SOCK_CLOEXEC, 0);
    if (fd < 0) error = errno;
    // Back home; a thread that cannot return would make the engine's next
    // sockets in the sandbox's namespace, so that is fatal to this one.
    if (::setns(home, CLONE_NEWNET) != 0) {
      if (fd >= 0) ::close(fd);
      ::close(home);
      errno = EIO;
      return -1;
    }
  }
  ::close(home);
  if (fd < 0) errno = error;
  return fd;
}

int bound_socket_in(int netns, int type, std::uint32_t address, std::uint16_t port, const std::string& what) {
  const int fd = socket_in(netns, AF_INET, type | SOCK_NONBLOCK);
  if (fd < 0) throw SandboxError(Reason::INTERNAL, "making " + what + "'s socket: " + std::strerror(errno));
  const int on = 1;
  if (type == SOCK_STREAM)
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // past TIME_WAIT of a previous one
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  where.sin_addr.s_addr = htonl(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0) {
    const int e = errno;
    ::close(fd);
    throw SandboxError(Reason::INTERNAL, "binding " + what + ": " + std::strerror(e));
  }
  return fd;
}

asio::ip::udp::socket bound_udp_socket_in(asio::io_context& io, int netns, std::uint32_t address, std::uint16_t port,
                                          const std::string& what) {
  const int fd = bound_socket_in(netns, SOCK_DGRAM, address, port, what);
  asio::ip::udp::socket socket(io);
  boost::system::error_code ec;
  socket.assign(asio::ip::udp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    throw SandboxError(Reason::INTERNAL, "serving " + what + "'s socket: " + ec.message());
  }
  return socket;
}

void run_and_wait(asio::io_context& io, const std::function<void()>& work) {
  if (io.get_executor().running_in_this_thread()) return work();
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  auto once = std::make_shared<std::once_flag>();
  asio::post(io, [work, done, once] {
    std::call_once(*once, [&] {
      work();
      done->set_value();
    });
  });
  // Only a stopped io_context (its thread gone) lets the work run here: a
  // busy one still runs the service's handlers, which must never race it.
  while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (io.stopped()) {
      std::call_once(*once, [&] {
        work();
        done->set_value();
      });
      return;
    }
  }
}

}  // namespace mayura::netfilter
