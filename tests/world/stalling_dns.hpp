#pragma once
// A DNS server of the world that never answers some names: a query for a
// name under `stall.test` is read and dropped, as from a server that is
// down; any other is answered from the world's records. For tests of what
// one sandbox's slow names may do to the others'.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mayura::testing {

class StallingDns {
 public:
  using Resolve = std::function<std::optional<std::uint32_t>(const std::string& name)>;
  // Binds address:53 (host byte order) in `netns` at once; serves on `io`.
  StallingDns(boost::asio::io_context& io, int netns, std::uint32_t address, Resolve resolve);
  ~StallingDns();  // returns when no handler of it runs any more
  StallingDns(const StallingDns&) = delete;
  StallingDns& operator=(const StallingDns&) = delete;

  std::uint64_t dropped() const;  // queries left unanswered so far

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::testing
