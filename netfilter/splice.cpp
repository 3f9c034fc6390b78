#include "mayura/netfilter/splice.hpp"

#include <boost/asio/write.hpp>

namespace mayura::netfilter {

namespace asio = boost::asio;
using asio::ip::tcp;

Splice::Splice(tcp::socket a, tcp::socket b) : a_(std::move(a)), b_(std::move(b)) {}

void Splice::start(std::string head) {
  head_ = std::move(head);
  if (head_.empty()) {
    pump(a_, b_, ab_);
  } else {
    asio::async_write(b_, asio::buffer(head_), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
      if (ec) return self->cut();
      self->head_.clear();
      self->pump(self->a_, self->b_, self->ab_);
    });
  }
  pump(b_, a_, ba_);
}

void Splice::cut() {
  boost::system::error_code ignored;
  a_.close(ignored);
  b_.close(ignored);
}

void Splice::pump(tcp::socket& from, tcp::socket& to, Buffer& buffer) {
  from.async_read_some(asio::buffer(buffer), [self = shared_from_this(), &from, &to, &buffer](
                                                 const boost::system::error_code& ec, std::size_t n) {
    if (ec == asio::error::eof) {
      boost::system::error_code ignored;
      to.shutdown(tcp::socket::shutdown_send, ignored);  // the other side sees the end, and may still answer
      return;
    }
    if (ec) return self->cut();
    asio::async_write(to, asio::buffer(buffer, n), [self, &from, &to, &buffer](const boost::system::error_code& wec, std::size_t) {
      if (wec) return self->cut();
      self->pump(from, to, buffer);
    });
  });
}

void reset(tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

}  // namespace mayura::netfilter
