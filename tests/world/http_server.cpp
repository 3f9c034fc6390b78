#include "http_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <charconv>
#include <list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bound_socket.hpp"
#include "mayura/netfilter/io_thread.hpp"

namespace mayura::testing {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr std::size_t kMaxHead = 16 * 1024;
constexpr std::size_t kChunk = 256 * 1024;
constexpr std::uint64_t kMaxBytes = std::uint64_t{4} << 30;

bool same_letters(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

struct Request {
  std::string_view method, target, host;
};

Request parse(std::string_view head) {
  Request r;
  std::size_t end = head.find("\r\n");
  const std::string_view line = head.substr(0, end);
  const std::size_t s1 = line.find(' ');
  r.method = line.substr(0, s1);
  if (s1 != std::string_view::npos) r.target = line.substr(s1 + 1, line.find(' ', s1 + 1) - s1 - 1);
  while (end != std::string_view::npos && end + 2 < head.size()) {
    const std::size_t start = end + 2;
    end = head.find("\r\n", start);
    const std::string_view header = head.substr(start, end - start);
    const std::size_t colon = header.find(':');
    if (colon != std::string_view::npos && same_letters(trim(header.substr(0, colon)), "host")) {
      r.host = trim(header.substr(colon + 1));
    }
  }
  return r;
}

// N of "/bytes/N", if that is the target and N is not too many.
std::optional<std::uint64_t> bytes_asked(const Request& r) {
  constexpr std::string_view prefix = "/bytes/";
  if (r.method != "GET" || r.target.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::string_view digits = r.target.substr(prefix.size());
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n > kMaxBytes) return std::nullopt;
  return n;
}

const std::string& filler() {
  static const std::string bytes(kChunk, 'x');
  return bytes;
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  explicit Connection(tcp::socket socket) : socket_(std::move(socket)) {}

  void start() {
    asio::async_read_until(socket_, asio::dynamic_buffer(head_, kMaxHead), "\r\n\r\n",
                           [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                             if (ec) return self->cut();  // gone, or a head too long to be a test's
                             self->respond(std::string_view(self->head_).substr(0, n));
                           });
  }

  void cut() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  void respond(std::string_view head) {
    const Request request = parse(head);
    std::string body;
    if (const auto n = bytes_asked(request)) {
      remaining_ = *n;
    } else {
      boost::system::error_code ec;
      const auto local = socket_.local_endpoint(ec);
      body = "hello from " + local.address().to_string() + ":" + std::to_string(local.port()) +
             " host=" + std::string(request.host) + "\n";
      remaining_ = 0;
    }
    out_ = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.empty() ? remaining_ : body.size()) + "\r\n\r\n" + body;
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                        if (ec) return self->cut();
                        self->stream();
                      });
  }

  void stream() {
    if (remaining_ == 0) return finish();
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, kChunk));
    asio::async_write(socket_, asio::buffer(filler().data(), n),
                      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t written) {
                        if (ec) return self->cut();
                        self->remaining_ -= written;
                        self->stream();
                      });
  }

  // Closing with unread bytes (a request body) would reset the connection
  // and could cost the client its answer: end our side, read to the
  // client's end, then close.
  void finish() {
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
                              if (ec) return self->cut();
                              self->finish();
                            });
  }

  tcp::socket socket_;
  std::string head_;
  std::string out_;
  std::uint64_t remaining_ = 0;
  std::array<char, 4096> drain_{};
};

}  // namespace

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  explicit State(asio::io_context& context) : io(context), acceptor(context) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!ec) {
        self->accepted.fetch_add(1);
        auto connection = std::make_shared<Connection>(std::move(socket));
        self->live.remove_if([](const std::weak_ptr<Connection>& w) { return w.expired(); });
        self->live.push_back(connection);
        connection->start();
      }
      self->accept();
    });
  }

  void stop() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    for (auto& w : live) {
      if (auto connection = w.lock()) connection->cut();
    }
    live.clear();
  }

  asio::io_context& io;
  tcp::acceptor acceptor;
  std::atomic<std::uint64_t> accepted{0};
  std::list<std::weak_ptr<Connection>> live;  // touched on the io thread only
};

HttpServer::HttpServer(asio::io_context& io, int netns, std::uint16_t port) : state_(std::make_shared<State>(io)) {
  const int fd = bound_socket(netns, SOCK_STREAM, port);
  boost::system::error_code ec;
  state_->acceptor.assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    throw std::runtime_error("serving TCP " + std::to_string(port) + ": " + ec.message());
  }
  asio::post(io, [s = state_] { s->accept(); });
}

HttpServer::~HttpServer() {
  netfilter::run_and_wait(state_->io, [s = state_] { s->stop(); });
}

std::uint64_t HttpServer::connections() const { return state_->accepted.load(); }

}  // namespace mayura::testing
