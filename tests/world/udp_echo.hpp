#pragma once
// The world's UDP echo: every datagram is counted and sent back as it came.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>

namespace mayura::testing {

class UdpEcho {
 public:
  // Binds 0.0.0.0:port inside `netns` at once (throws std::runtime_error if
  // it cannot); serves on `io`.
  UdpEcho(boost::asio::io_context& io, int netns, std::uint16_t port);
  // Returns when no handler of it runs any more.
  ~UdpEcho();
  UdpEcho(const UdpEcho&) = delete;
  UdpEcho& operator=(const UdpEcho&) = delete;

  std::uint64_t received() const;  // datagrams so far

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::testing
