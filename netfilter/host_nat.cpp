#include "host_nat.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mayura/errors.hpp"
#include "mayura/netfilter/nftables.hpp"
#include "netns_thread.hpp"
#include "proc_sys.hpp"
#include "veth.hpp"

namespace mayura::netfilter {
namespace {

[[noreturn]] void fail(const std::string& step, int error) {
  throw SandboxError(Reason::INTERNAL, step + ": " + std::strerror(error));
}

void run_or_fail(int host_netns, const std::string& step, const std::string& commands) {
  const NftResult r = run_nft(host_netns, commands);
  if (!r.ok) throw SandboxError(Reason::INTERNAL, step + ": " + r.error);
}

}  // namespace

// Closing the descriptor (when the lock goes) drops the lock.
TableLock::TableLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
  if (!fd_) fail("opening the network lock " + path, errno);
  while (::flock(fd_.get(), LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int error = errno;
    fail("locking the network lock " + path, error);
  }
}

std::string nat_table_rules(const AddressPool& pool) {
  const std::string p = kHostLinkPrefix;
  const std::string pool_text = pool.text();
  // Deleting and defining in one transaction makes this idempotent, and
  // brings a table an older engine left to today's rules.
  return "add table ip mayura\n"
         "delete table ip mayura\n"
         "table ip mayura {\n"
         // A sandbox reaches no service of the host, on any of its
         // addresses: refused at once rather than left to time out.
         "  chain input {\n"
         "    type filter hook input priority filter - 1; policy accept;\n"
         "    iifname \"" +
         p +
         "*\" goto refuse\n"
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority filter - 1; policy accept;\n"
         // A sandbox cannot change its links (its namespace is the host
         // user namespace's), but a raw socket could still forge a source:
         // only its own address, on its own link, goes anywhere.
         "    iifname \"" +
         p + "*\" ip saddr != " + pool_text +
         " drop\n"
         "    iifname \"" +
         p +
         "*\" fib saddr . iif oif missing drop\n"
         "    iifname \"" +
         p + "*\" oifname \"" + p +
         "*\" goto refuse\n"
         // Cloud metadata services hand out the host's credentials.
         "    iifname \"" +
         p +
         "*\" ip daddr { 169.254.0.0/16, 100.100.100.200, 192.0.0.192, 168.63.129.16 } goto refuse\n"
         // A host service published by DNAT (Docker's -p, a NodePort) is
         // forwarded, not input: it is the host's all the same.
         "    iifname \"" +
         p +
         "*\" ct status dnat goto refuse\n"
         // Nothing outside opens a connection into a sandbox.
         "    oifname \"" +
         p +
         "*\" ct state established,related accept\n"
         "    oifname \"" +
         p +
         "*\" drop\n"
         "  }\n"
         "  chain refuse {\n"
         "    meta l4proto tcp reject with tcp reset\n"
         "    reject with icmp type admin-prohibited\n"
         "  }\n"
         "  chain postrouting {\n"
         "    type nat hook postrouting priority srcnat; policy accept;\n"
         // postrouting knows no input interface: the pool stands for it.
         "    ip saddr " +
         pool_text + " oifname != \"" + p +
         "*\" masquerade\n"
         "  }\n"
         "}\n";
}

void define_nat_table(int host_netns, const AddressPool& pool) {
  run_or_fail(host_netns, "defining the nftables table ip mayura", nat_table_rules(pool));
}

void remove_nat_table_if_unused(int host_netns, RouteSocket& host) {
  if (!host.links_starting_with(kHostLinkPrefix).empty()) return;
  run_or_fail(host_netns, "removing the nftables table ip mayura", "add table ip mayura\ndelete table ip mayura\n");
}

void enable_forwarding(int host_netns) {
  run_in_netns(host_netns, [] {
    if (!set_proc_sys("/proc/sys/net/ipv4/ip_forward", "1")) fail("turning on IPv4 forwarding", ENOENT);
  });
}

}  // namespace mayura::netfilter
