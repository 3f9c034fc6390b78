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
#include "mayura/base/unique_fd.hpp"

namespace mayura::netfilter {

namespace asio = boost::asio;

IoThread::IoThread()
    : work_(asio::make_work_guard(io_)), thread_("mayura-network", [this] {
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
  const UniqueFd home(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!home) return -1;
  if (::setns(netns, CLONE_NEWNET) != 0) return -1;
  UniqueFd fd(::socket(domain, type | SOCK_CLOEXEC, 0));
  const int error = errno;
  // Back home; a thread that cannot return would make the engine's next
  // sockets in the sandbox's namespace, so that is fatal to this one.
  if (::setns(home.get(), CLONE_NEWNET) != 0) {
    errno = EIO;
    return -1;
  }
  if (!fd) errno = error;
  return fd.release();
}

int bound_socket_in(int netns, int type, std::uint32_t address, std::uint16_t port, const std::string& what) {
  UniqueFd fd(socket_in(netns, AF_INET, type | SOCK_NONBLOCK));
  if (!fd) throw SandboxError(Reason::INTERNAL, "making " + what + "'s socket: " + std::strerror(errno));
  const int on = 1;
  if (type == SOCK_STREAM)
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // past TIME_WAIT of a previous one
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(port);
  where.sin_addr.s_addr = htonl(address);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&where), sizeof where) != 0) {
    const int error = errno;  // before the message's allocations
    throw SandboxError(Reason::INTERNAL, "binding " + what + ": " + std::strerror(error));
  }
  return fd.release();
}

asio::ip::udp::socket bound_udp_socket_in(asio::io_context& io, int netns, std::uint32_t address, std::uint16_t port,
                                          const std::string& what) {
  UniqueFd fd(bound_socket_in(netns, SOCK_DGRAM, address, port, what));
  asio::ip::udp::socket socket(io);
  boost::system::error_code ec;
  socket.assign(asio::ip::udp::v4(), fd.get(), ec);
  if (ec) throw SandboxError(Reason::INTERNAL, "serving " + what + "'s socket: " + ec.message());
  fd.release();  // the socket's now
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
