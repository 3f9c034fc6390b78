#include "mayura/netfilter/splice.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/write.hpp>
#include <cerrno>

namespace mayura::netfilter {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// How much one pipe holds: a large part of a window per splice, and a
// bounded amount the engine holds for a reader that does not read.
constexpr int kPipeBytes = 256 * 1024;

}  // namespace

Splice::Splice(tcp::socket a, tcp::socket b) : a_(std::move(a)), b_(std::move(b)) {}

void Splice::start(std::string head) {
  boost::system::error_code ignored;
  a_.native_non_blocking(true, ignored);
  b_.native_non_blocking(true, ignored);
  for (Direction* d : {&ab_, &ba_}) {
    // Without a pipe (out of descriptors) the bytes go through a buffer.
    int ends[2];
    if (::pipe2(ends, O_NONBLOCK | O_CLOEXEC) == 0) {
      d->pipe_out.reset(ends[0]);
      d->pipe_in.reset(ends[1]);
      ::fcntl(d->pipe_in.get(), F_SETPIPE_SZ, kPipeBytes);
    }
  }
  head_ = std::move(head);
  if (head_.empty()) {
    pump(a_, b_, ab_);
  } else {
    asio::async_write(b_, asio::buffer(head_),
                      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                        if (ec) return self->cut();
                        self->head_.clear();
                        self->pump(self->a_, self->b_, self->ab_);
                      });
  }
  pump(b_, a_, ba_);
}

void Splice::cut() {
  // A reset, not a FIN queued behind what the sockets still hold: a slow
  // reader would otherwise go on receiving a cut connection's data.
  reset(a_);
  reset(b_);
}

void Splice::pump(tcp::socket& from, tcp::socket& to, Direction& d) {
  if (!d.pipe_out) return copy(from, to, d);
  // Bytes move socket -> pipe -> socket inside the kernel; the engine only
  // waits for each side to be ready.
  for (;;) {
    if (d.in_pipe > 0) {
      const ssize_t n = ::splice(d.pipe_out.get(), nullptr, to.native_handle(), nullptr, d.in_pipe,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d.in_pipe -= static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        to.async_wait(tcp::socket::wait_write,
                      [self = shared_from_this(), &from, &to, &d](const boost::system::error_code& ec) {
                        if (ec) return self->cut();
                        self->pump(from, to, d);
                      });
        return;
      }
      return cut();
    }
    const ssize_t n = ::splice(from.native_handle(), nullptr, d.pipe_in.get(), nullptr, kPipeBytes,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      d.in_pipe = static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return end_of(to);
    if (errno == EAGAIN) {
      from.async_wait(tcp::socket::wait_read,
                      [self = shared_from_this(), &from, &to, &d](const boost::system::error_code& ec) {
                        if (ec) return self->cut();
                        self->pump(from, to, d);
                      });
      return;
    }
    return cut();
  }
}

void Splice::copy(tcp::socket& from, tcp::socket& to, Direction& d) {
  from.async_read_some(asio::buffer(d.buffer),
                       [self = shared_from_this(), &from, &to, &d](const boost::system::error_code& ec, std::size_t n) {
                         if (ec == asio::error::eof) return self->end_of(to);
                         if (ec) return self->cut();
                         asio::async_write(to, asio::buffer(d.buffer, n),
                                           [self, &from, &to, &d](const boost::system::error_code& wec, std::size_t) {
                                             if (wec) return self->cut();
                                             self->copy(from, to, d);
                                           });
                       });
}

// The other side sees the end, and may still answer.
void Splice::end_of(tcp::socket& to) {
  boost::system::error_code ignored;
  to.shutdown(tcp::socket::shutdown_send, ignored);
}

void reset(tcp::socket& socket) {
  boost::system::error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
}

}  // namespace mayura::netfilter
