#pragma once
// Names resolved on the host, for the allowlist's proxy (the addresses of an
// allowed name) and for the DNS of network `all` (queries passed on as they
// are). Either through servers the operator names, or through the host's
// own resolver. Every call blocks: callers run them off the io thread.

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/address_v4.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::netfilter {

class UpstreamDns {
 public:
  // With servers of its own, a query goes to each this many times, waiting
  // `wait_for_answer` (by default kWaitForAnswer) for each answer; a lookup
  // asks for the name's A records, then its AAAA: one whose servers never
  // answer fails after 2 × kTries times that, and holds a lookup thread
  // that long.
  static constexpr int kTries = 2;
  static constexpr std::chrono::seconds kWaitForAnswer{2};

  // `servers` empty: the host's resolver (getaddrinfo, so /etc/hosts and
  // nsswitch count; queries go to /etc/resolv.conf's servers).
  explicit UpstreamDns(std::vector<boost::asio::ip::address_v4> servers = {},
                       std::chrono::seconds wait_for_answer = kWaitForAnswer);

  // The addresses of `name` (IPv4 first), kept for a short while; empty if
  // it has none or the lookup failed.
  std::vector<boost::asio::ip::address> lookup(const std::string& name);
  // What lookup() would return from what it keeps, without asking; none if
  // it keeps nothing for `name`. Never blocks on the network.
  std::optional<std::vector<boost::asio::ip::address>> cached(const std::string& name);
  // The upstream's answer to a whole DNS query; none if there is none.
  std::optional<std::string> forward(std::string_view query) const;

 private:
  std::vector<boost::asio::ip::address> ask_servers(const std::string& name) const;
  std::vector<boost::asio::ip::address> ask_host(const std::string& name) const;

  using Clock = std::chrono::steady_clock;
  struct Cached {
    std::vector<boost::asio::ip::address> addresses;
    Clock::time_point until;
  };
  std::vector<boost::asio::ip::address_v4> servers_;
  std::chrono::seconds wait_for_answer_;
  std::mutex mutex_;
  std::map<std::string, Cached> cache_;
};

}  // namespace mayura::netfilter
