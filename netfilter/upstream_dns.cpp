#include "mayura/netfilter/upstream_dns.hpp"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <cstring>
#include <memory>

namespace mayura::netfilter {
namespace {

using boost::asio::ip::address;

// Long enough that a burst of connections asks once, short enough that a
// moved service is followed soon. Every address is checked on each use.
constexpr auto kCacheFor = std::chrono::seconds(30);
constexpr std::size_t kCacheEntries = 4096;
constexpr int kMaxAnswer = 65536;

// A resolver state of our own (never the process's _res), pointed at
// `servers` when there are any.
class Resolver {
 public:
  Resolver(const std::vector<boost::asio::ip::address_v4>& servers, std::chrono::seconds wait_for_answer) {
    std::memset(&state_, 0, sizeof state_);
    ok_ = ::res_ninit(&state_) == 0;
    if (!ok_ || servers.empty()) return;
    state_.nscount = 0;
    for (const auto& s : servers) {
      if (state_.nscount >= MAXNS) break;
      sockaddr_in& a = state_.nsaddr_list[state_.nscount++];
      a = {};
      a.sin_family = AF_INET;
      a.sin_port = htons(53);
      a.sin_addr.s_addr = htonl(s.to_uint());
    }
    state_.retrans = static_cast<int>(wait_for_answer.count());
    state_.retry = UpstreamDns::kTries;
  }
  ~Resolver() {
    if (ok_) ::res_nclose(&state_);
  }
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;
  bool ok() const { return ok_; }
  res_state get() { return &state_; }

 private:
  struct __res_state state_;
  bool ok_ = false;
};

// The A or AAAA records of an answer.
void collect(const unsigned char* answer, int length, std::vector<address>& out) {
  ns_msg message;
  if (::ns_initparse(answer, length, &message) != 0) return;
  const int count = ns_msg_count(message, ns_s_an);
  for (int i = 0; i < count; ++i) {
    ns_rr record;
    if (::ns_parserr(&message, ns_s_an, i, &record) != 0) return;
    if (ns_rr_class(record) != ns_c_in) continue;
    if (ns_rr_type(record) == ns_t_a && ns_rr_rdlen(record) == 4) {
      std::uint32_t v;
      std::memcpy(&v, ns_rr_rdata(record), 4);
      out.push_back(boost::asio::ip::address_v4(ntohl(v)));
    } else if (ns_rr_type(record) == ns_t_aaaa && ns_rr_rdlen(record) == 16) {
      boost::asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), ns_rr_rdata(record), 16);
      out.push_back(boost::asio::ip::address_v6(bytes));
    }
  }
}

}  // namespace

UpstreamDns::UpstreamDns(std::vector<boost::asio::ip::address_v4> servers, std::chrono::seconds wait_for_answer)
    : servers_(std::move(servers)), wait_for_answer_(wait_for_answer) {}

std::optional<std::vector<address>> UpstreamDns::cached(const std::string& name) {
  std::lock_guard lock(mutex_);
  const auto it = cache_.find(name);
  if (it != cache_.end() && it->second.until > Clock::now()) return it->second.addresses;
  return std::nullopt;
}

std::vector<address> UpstreamDns::lookup(const std::string& name) {
  if (auto kept = cached(name)) return *kept;
  std::vector<address> found = servers_.empty() ? ask_host(name) : ask_servers(name);
  if (found.empty()) return found;  // a failure is not kept: the next connection asks again
  std::lock_guard lock(mutex_);
  if (cache_.size() >= kCacheEntries) cache_.clear();
  cache_[name] = {found, Clock::now() + kCacheFor};
  return found;
}

std::vector<address> UpstreamDns::ask_servers(const std::string& name) const {
  Resolver resolver(servers_, wait_for_answer_);
  std::vector<address> found;
  if (!resolver.ok()) return found;
  auto answer = std::make_unique<unsigned char[]>(kMaxAnswer);
  for (int type : {ns_t_a, ns_t_aaaa}) {
    const int n = ::res_nquery(resolver.get(), name.c_str(), ns_c_in, type, answer.get(), kMaxAnswer);
    if (n > 0) collect(answer.get(), n, found);
  }
  return found;
}

std::vector<address> UpstreamDns::ask_host(const std::string& name) const {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::vector<address> v4, v6;
  // Fully qualified: the host's search domains must not turn an allowed
  // name into an internal one.
  if (::getaddrinfo((name + ".").c_str(), nullptr, &hints, &list) != 0) return v4;
  for (const addrinfo* i = list; i; i = i->ai_next) {
    if (i->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(i->ai_addr);
      v4.push_back(boost::asio::ip::address_v4(ntohl(in->sin_addr.s_addr)));
    } else if (i->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ai_addr);
      boost::asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), &in6->sin6_addr, 16);
      v6.push_back(boost::asio::ip::address_v6(bytes));
    }
  }
  ::freeaddrinfo(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

std::optional<std::string> UpstreamDns::forward(std::string_view query) const {
  Resolver resolver(servers_, wait_for_answer_);
  if (!resolver.ok() || query.size() > kMaxAnswer) return std::nullopt;
  auto answer = std::make_unique<unsigned char[]>(kMaxAnswer);
  const int n = ::res_nsend(resolver.get(), reinterpret_cast<const unsigned char*>(query.data()),
                            static_cast<int>(query.size()), answer.get(), kMaxAnswer);
  if (n <= 0) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(answer.get()), static_cast<std::size_t>(n));
}

}  // namespace mayura::netfilter
