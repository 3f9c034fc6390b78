#pragma once
// The world's web server: minimal HTTP/1.1, one request per connection.
// Any request gets 200 and "hello from ADDRESS:PORT host=HOST\n" (the address
// the client reached, its Host header); GET /bytes/N gets N bytes (up to
// 4 GiB, streamed) for download benchmarks.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>

namespace mayura::testing {

class HttpServer {
 public:
  // Listens on 0.0.0.0:port inside `netns` at once (throws
  // std::runtime_error if it cannot); serves on `io`, clients concurrently.
  HttpServer(boost::asio::io_context& io, int netns, std::uint16_t port);
  // Stops listening and cuts every connection; returns when no handler of
  // it runs any more.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint64_t connections() const;  // accepted so far

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::testing
