#pragma once
// The engine's network services (published ports, the allowlist's DNS
// server) run on one io_context, on a thread of their own.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include "mayura/runtime.hpp"

namespace mayura::netfilter {

class IoThread {
 public:
  IoThread();
  ~IoThread();
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;
  boost::asio::io_context& context() { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  OwnedThread thread_;
};

// Runs `work` on `io`'s thread and returns once it has run (here, if the
// io_context has stopped: its thread is gone). For stopping a service:
// after it, none of the service's handlers runs.
void run_and_wait(boost::asio::io_context& io, const std::function<void()>& work);

// A socket made inside the network namespace `netns` (the calling thread
// enters it for the call and returns to its own). -1 with errno on failure.
int socket_in(int netns, int domain, int type) noexcept;

// An IPv4 socket of `type` (nonblocking) made inside `netns` and bound to
// address:port (host byte order). Throws SandboxError(INTERNAL) saying
// which step of making `what` failed.
int bound_socket_in(int netns, int type, std::uint32_t address, std::uint16_t port, const std::string& what);

// The same for UDP, adopted by `io`: a service's socket, ready for its
// receive loop. Throws SandboxError(INTERNAL) saying which step of making
// `what` failed; nothing is left open then.
boost::asio::ip::udp::socket bound_udp_socket_in(boost::asio::io_context& io, int netns, std::uint32_t address,
                                                 std::uint16_t port, const std::string& what);

}  // namespace mayura::netfilter
