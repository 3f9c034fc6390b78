#pragma once
// Where the engine's services sit inside a sandbox's network namespace: one
// address on its loopback, 198.18.0.1, whose /15 makes every synthetic
// address local there too. The ports are below 1024, which nothing in the
// sandbox may bind (the namespace belongs to the host's user namespace), so
// no command can take a service's place before the engine starts it.

#include <cstdint>
#include <string>

namespace mayura::netfilter {

constexpr std::uint32_t kServiceAddress = 0xC6120001;  // 198.18.0.1
constexpr int kServicePrefix = 15;                     // 198.18.0.0/15 local
constexpr const char* kServiceAddressText = "198.18.0.1";
constexpr std::uint16_t kDnsPort = 53;
constexpr std::uint16_t kProxyPort = 80;        // the HTTP proxy (CONNECT and absolute URIs)
constexpr std::uint16_t kTransparentPort = 81;  // where nftables sends TCP to synthetic addresses

inline std::string proxy_url() {
  return std::string("http://") + kServiceAddressText + ":" + std::to_string(kProxyPort);
}

// What every sandbox's /etc/resolv.conf says, whatever its network: with no
// network the address is unreachable and a lookup fails at once.
inline std::string resolv_conf() {
  return std::string("# the sandbox's DNS, served by the engine\nnameserver ") + kServiceAddressText +
         "\noptions timeout:2 attempts:2\n";
}

}  // namespace mayura::netfilter
