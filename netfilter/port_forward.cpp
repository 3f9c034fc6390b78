#include "mayura/netfilter/port_forward.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <boost/asio/write.hpp>
#include <cerrno>

#include "mayura/errors.hpp"
#include "mayura/base/unique_fd.hpp"
#include "mayura/netfilter/splice.hpp"

namespace mayura::netfilter {

namespace asio = boost::asio;
using asio::ip::tcp;

struct PortForwarder::State : std::enable_shared_from_this<PortForwarder::State> {
  State(asio::io_context& context, UniqueFd ns, std::uint16_t target)
      : io(context), acceptor(context), netns(std::move(ns)), port(target) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](const boost::system::error_code& ec, tcp::socket outside) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!ec) {
        self->forward(std::move(outside));
        return self->accept();
      }
      // Out of descriptors, most likely: a pause, not a spin.
      auto timer = std::make_shared<asio::steady_timer>(self->io, std::chrono::milliseconds(100));
      timer->async_wait([self, timer](const boost::system::error_code&) {
        if (self->acceptor.is_open()) self->accept();
      });
    });
  }

  void forward(tcp::socket outside) {
    UniqueFd fd(socket_in(netns.get(), AF_INET, SOCK_STREAM | SOCK_NONBLOCK));
    if (!fd) return reset(outside);
    tcp::socket inside(io);
    boost::system::error_code ec;
    inside.assign(tcp::v4(), fd.get(), ec);
    if (ec) return reset(outside);
    fd.release();  // the socket's now
    auto pending = std::make_shared<std::pair<tcp::socket, tcp::socket>>(std::move(outside), std::move(inside));
    pending->second.async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), port),
                                  [self = shared_from_this(), pending](const boost::system::error_code& cec) {
                                    if (cec) return reset(pending->first);  // nothing listens inside
                                    auto splice =
                                        std::make_shared<Splice>(std::move(pending->first), std::move(pending->second));
                                    if (self->splices.add(splice, 0)) splice->start();
                                  });
  }

  void stop() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    splices.stop();
  }

  asio::io_context& io;
  tcp::acceptor acceptor;
  UniqueFd netns;
  std::uint16_t port;
  SpliceSet<int> splices;
};

PortForwarder::PortForwarder(asio::io_context& io, int netns, std::uint16_t port, PortOwners& owners, uid_t owner,
                             std::uint16_t host_port)
    : owners_(owners) {
  UniqueFd ns(::fcntl(netns, F_DUPFD_CLOEXEC, 3));
  if (!ns) throw SandboxError(Reason::INTERNAL, "publishing a port: duplicating the sandbox's namespace failed");
  state_ = std::make_shared<State>(io, std::move(ns), port);
  // Bound, not yet listening, while the rule is made: no connection can be
  // taken before only its owner may make one.
  try {
    const tcp::endpoint local(asio::ip::address_v4::loopback(), 0);
    state_->acceptor.open(local.protocol());
    boost::system::error_code taken;
    // Its last connections' TIME_WAIT must not keep a port taken back.
    state_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    if (host_port) state_->acceptor.bind({local.address(), host_port}, taken);
    if (!host_port || taken) state_->acceptor.bind(local);
    host_port_ = state_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw SandboxError(Reason::INTERNAL, std::string("publishing port ") + std::to_string(port) +
                                             ": binding 127.0.0.1 failed: " + e.code().message());
  }
  owners_.restrict(host_port_, owner);
  try {
    state_->acceptor.listen();
  } catch (const boost::system::system_error& e) {
    owners_.lift(host_port_);
    throw SandboxError(Reason::INTERNAL, std::string("publishing port ") + std::to_string(port) +
                                             ": listening on 127.0.0.1 failed: " + e.code().message());
  }
  asio::post(io, [s = state_] { s->accept(); });
}

PortForwarder::~PortForwarder() {
  // On the io thread, where every handler of it runs: after this, none of
  // its sockets is open.
  run_and_wait(state_->io, [s = state_] { s->stop(); });
  owners_.lift(host_port_);
}

}  // namespace mayura::netfilter
