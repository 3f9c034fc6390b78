#pragma once
// One HTTP/1.1 request to a service, over a Unix socket or TLS: the remote
// provider's only way out. Each call runs on an io_context of its own in the
// caller's thread, so a timeout and the caller's cancellation can end it at
// any point, and nothing of it outlives the call.

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>

namespace mayura::service {

struct Endpoint {
  enum class Kind { unix_socket, https } kind = Kind::unix_socket;
  std::string path;        // unix
  std::string host, port;  // https
  std::string token;
  std::string ca_file;  // https: the CA to verify against; empty: the system's
  std::string text;     // as given, for messages
};

// "unix:///run/mayura/mayurad.sock", "/run/mayura/mayurad.sock" or
// "https://host:port". INVALID_CONFIG otherwise.
Endpoint parse_endpoint(const std::string& url);

struct HttpCall {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string target;
  std::string body;
  std::string content_type;
  // The whole call's bound; zero: none (an exec runs as long as it runs).
  std::chrono::milliseconds timeout{0};
  // On a stop, the request side is closed (the service stops what it runs)
  // and its answer is waited for at most a few seconds more.
  std::stop_token cancellation;
  // Each piece of a chunked answer's body as it arrives (then not kept, and
  // so not bounded here: the callback bounds what it keeps).
  std::function<void(std::string_view)> on_chunk;
  // The most of an answer's body that is kept; more fails the call. A
  // service is not trusted to bound what it sends.
  std::uint64_t max_answer_bytes = std::uint64_t{256} << 20;
};

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
  bool cancelled = false;  // the caller's stop came during the call
};

// INTERNAL naming the endpoint when it cannot be reached or answers no HTTP;
// CANCELLED when stopped before an answer came.
HttpAnswer http_call(const Endpoint& endpoint, const HttpCall& call);

}  // namespace mayura::service
