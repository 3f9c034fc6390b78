#include "mayura/netfilter/port_forward.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <list>
#include <mutex>

#include "mayura/errors.hpp"

namespace mayura::netfilter {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr std::size_t kBuffer = 64 * 1024;

// Two sockets spliced both ways; half-closes are passed on, and an error on
// either side ends both.
class Link : public std::enable_shared_from_this<Link> {
 public:
  Link(tcp::socket outside, tcp::socket inside) : a_(std::move(outside)), b_(std::move(inside)) {}

  void start() {
    pump(a_, b_, ab_);
    pump(b_, a_, ba_);
  }
  void cut() {
    boost::system::error_code ignored;
    a_.close(ignored);
    b_.close(ignored);
  }

 private:
  void pump(tcp::socket& from, tcp::socket& to, std::array<char, kBuffer>& buffer) {
    from.async_read_some(asio::buffer(buffer), [self = shared_from_this(), &from, &to, &buffer](
                                                   const boost::system::error_code& ec, std::size_t n) {
      if (ec == asio::error::eof) {
        boost::system::error_code ignored;
        to.shutdown(tcp::socket::shutdown_send, ignored);  // the other side sees the end, and may still answer
        return;
      }
      if (ec) return self->cut();
      asio::async_write(to, asio::buffer(buffer, n),
                        [self, &from, &to, &buffer](const boost::system::error_code& wec, std::size_t) {
                          if (wec) return self->cut();
                          self->pump(from, to, buffer);
                        });
    });
  }

  tcp::socket a_, b_;
  std::array<char, kBuffer> ab_{}, ba_{};
};

}  // namespace

// --- PortForwarder ------------------------------------------------------------

struct PortForwarder::State : std::enable_shared_from_this<PortForwarder::State> {
  State(asio::io_context& context, int ns, std::uint16_t target) : io(context), acceptor(context), netns(ns), port(target) {}
  ~State() {
    if (netns >= 0) ::close(netns);
  }

  void accept() {
    acceptor.async_accept([self = shared_from_this()](const boost::system::error_code& ec, tcp::socket outside) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!ec) self->forward(std::move(outside));
      self->accept();
    });
  }

  void forward(tcp::socket outside) {
    const int fd = socket_in(netns, AF_INET, SOCK_STREAM | SOCK_NONBLOCK);
    if (fd < 0) return refuse(outside);
    tcp::socket inside(io);
    boost::system::error_code ec;
    inside.assign(tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return refuse(outside);
    }
    auto pending = std::make_shared<std::pair<tcp::socket, tcp::socket>>(std::move(outside), std::move(inside));
    pending->second.async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), port),
                                  [self = shared_from_this(), pending](const boost::system::error_code& cec) {
                                    if (cec) return refuse(pending->first);  // nothing listens inside
                                    auto link = std::make_shared<Link>(std::move(pending->first), std::move(pending->second));
                                    std::lock_guard lock(self->mutex);
                                    if (self->stopped) return link->cut();
                                    self->links.remove_if([](const std::weak_ptr<Link>& w) { return w.expired(); });
                                    self->links.push_back(link);
                                    link->start();
                                  });
  }

  // A reset, so the client fails at once instead of seeing a connection
  // that goes nowhere.
  static void refuse(tcp::socket& s) {
    boost::system::error_code ignored;
    s.set_option(asio::socket_base::linger(true, 0), ignored);
    s.close(ignored);
  }

  void stop() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    std::lock_guard lock(mutex);
    stopped = true;
    for (auto& w : links) {
      if (auto link = w.lock()) link->cut();
    }
    links.clear();
  }

  asio::io_context& io;
  tcp::acceptor acceptor;
  int netns;
  std::uint16_t port;
  std::mutex mutex;
  bool stopped = false;
  std::list<std::weak_ptr<Link>> links;
};

PortForwarder::PortForwarder(asio::io_context& io, int netns, std::uint16_t port) {
  const int ns = ::fcntl(netns, F_DUPFD_CLOEXEC, 3);
  if (ns < 0) throw SandboxError(Reason::INTERNAL, "publishing a port: duplicating the sandbox's namespace failed");
  state_ = std::make_shared<State>(io, ns, port);
  try {
    const tcp::endpoint local(asio::ip::address_v4::loopback(), 0);
    state_->acceptor.open(local.protocol());
    state_->acceptor.bind(local);
    state_->acceptor.listen();
    host_port_ = state_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw SandboxError(Reason::INTERNAL, std::string("publishing port ") + std::to_string(port) +
                                             ": listening on 127.0.0.1 failed: " + e.code().message());
  }
  asio::post(io, [s = state_] { s->accept(); });
}

PortForwarder::~PortForwarder() {
  // On the io thread, where every handler of it runs: after this, none of
  // its sockets is open.
  run_and_wait(state_->io, [s = state_] { s->stop(); });
}

}  // namespace mayura::netfilter
