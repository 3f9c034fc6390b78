// The networks' costs, side by side in one run, in a world of the bench's own
// (tests/world: a network namespace with HTTP and DNS servers on
// documentation addresses; nothing is sent anywhere else):
//   download: a large file by curl (i) from the host itself, (ii) from a
//     sandbox with network all (veth + NAT), (iii) from an allowlist sandbox
//     through the transparent proxy, (iv) the same through the HTTP proxy
//     (absolute-URI request); then (v, vi) the host and the transparent proxy
//     at an internet link's speed (curl caps the rate), and the engine's cpu
//     per GiB proxied;
//   connections per second: sequential connect + request + answer, from the
//     same four places;
//   DNS answer time: queries from a sandbox to the engine's DNS (allowlist:
//     answered from the list; refused names; all: passed on to the world's
//     DNS), against the world's DNS asked from the host.
// usage: bench_network [MIB] [CONNECTIONS]

#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <vector>

#include "mayura/native.hpp"
#include "mayura/netfilter/loopback.hpp"
#include "mayura/sandbox.hpp"
#include "world.hpp"

namespace {

// Python run in a sandbox (or on the host): `connections` sequential HTTP/1.0
// requests to host:port, then prints connections per second.
const char* kConnect = R"(
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
start = time.perf_counter()
for _ in range(n):
    s = socket.create_connection(addr)
    s.sendall(b'GET / HTTP/1.0\r\nHost: ' + host.encode() + b'\r\n\r\n')
    while s.recv(65536): pass
    s.close()
print('%.0f' % (n / (time.perf_counter() - start)))
)";

// DNS queries for `name` (A) to server:53, one at a time; prints the median
// and p95 answer time in microseconds.
const char* kDns = R"(
import socket, struct, sys, time
server, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
q = b''.join(bytes([len(l)]) + l.encode() for l in name.split('.')) + b'\0'
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(5); u.connect((server, 53))
times = []
for i in range(n):
    packet = struct.pack('>HHHHHH', i, 0x0100, 1, 0, 0, 0) + q + struct.pack('>HH', 1, 1)
    t = time.perf_counter(); u.send(packet); u.recv(4096); times.append((time.perf_counter() - t) * 1e6)
times.sort()
print('%.0f %.0f' % (times[len(times) // 2], times[len(times) * 95 // 100]))
)";

std::string shell_out(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  return out;
}

std::string in_sandbox(const mayura::Sandbox& s, const std::string& script) {
  mayura::ExecOptions o;
  o.timeout_ms = 600000;
  const mayura::ExecResult r = s.exec({"/bin/sh", "-c", script}, o);
  if (r.exit_code != 0)
    std::fprintf(stderr, "failed (%d): %s\n%s", r.exit_code.value_or(-1), script.c_str(), r.stderr.c_str());
  return r.stdout;
}

// CPU seconds of this process (the engine's io thread among its threads).
double engine_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double number(const std::string& text) { return std::atof(text.c_str()); }

// The median of three runs of `once`.
double median3(const std::function<double()>& once) {
  std::vector<double> v = {once(), once(), once()};
  std::sort(v.begin(), v.end());
  return v[1];
}

}  // namespace

int main(int argc, char** argv) {
  const int mib = argc > 1 ? std::max(16, std::atoi(argv[1])) : 1024;
  const int connections = argc > 2 ? std::max(50, std::atoi(argv[2])) : 1000;
  // A namespace of the bench's own: the world hangs off it, and the host's
  // real network is never touched.
  if (::unshare(CLONE_NEWNET) != 0) {
    std::perror("unshare(CLONE_NEWNET) (run as root)");
    return 1;
  }
  const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  mayura::netfilter::bring_up_loopback(self);
  ::close(self);
  mayura::testing::World world;

  mayura::NativeOptions options;
  options.dns_servers = {mayura::testing::World::kDnsAddress};
  options.public_ranges = {"203.0.113.0/24"};
  mayura::SandboxesOptions limits;
  limits.max_sandboxes = 2;
  limits.network = {mayura::NetworkKind::none, mayura::NetworkKind::allowlist, mayura::NetworkKind::all};
  auto sandboxes = mayura::create_sandboxes(mayura::native_sandboxes(options), limits);
  mayura::CreateOptions c;
  c.lifetime_ms = 1200000;
  c.network = mayura::Network::all();
  const mayura::Sandbox open = sandboxes.create(c);
  c.network = mayura::Network::allow_only({"allowed.test"});
  const mayura::Sandbox listed = sandboxes.create(c);
  for (const auto* s : {&open, &listed}) {
    s->write_file("connect.py", kConnect);
    s->write_file("dns.py", kDns);
  }
  char dir[] = "/tmp/mayura-bench-net-XXXXXX";
  if (!::mkdtemp(dir)) return 1;
  const std::string host_dir = dir;
  shell_out("cat > " + host_dir + "/connect.py <<'EOF'\n" + kConnect + "EOF\n");
  shell_out("cat > " + host_dir + "/dns.py <<'EOF'\n" + kDns + "EOF\n");

  const std::string bytes = std::to_string(static_cast<long long>(mib) << 20);
  const std::string curl = "curl -sS -o /dev/null -w '%{speed_download}' ";
  std::printf("download of %d MiB by curl, median of 3, MB/s\n", mib);
  const double host = median3([&] { return number(shell_out(curl + "http://203.0.113.10/bytes/" + bytes)); });
  const double all = median3([&] { return number(in_sandbox(open, curl + "http://203.0.113.10/bytes/" + bytes)); });
  const double cpu_before = engine_cpu_seconds();
  const double transparent =
      median3([&] { return number(in_sandbox(listed, curl + "--noproxy '*' http://allowed.test/bytes/" + bytes)); });
  const double cpu_per_gib = (engine_cpu_seconds() - cpu_before) / (3.0 * mib / 1024.0);
  const double proxied =
      median3([&] { return number(in_sandbox(listed, curl + "http://allowed.test/bytes/" + bytes)); });
  std::printf("  %-52s %10.0f\n", "(i) from the host", host / 1e6);
  std::printf("  %-52s %10.0f\n", "(ii) sandbox, network all (veth + NAT)", all / 1e6);
  std::printf("  %-52s %10.0f\n", "(iii) sandbox, allowlist, transparent proxy", transparent / 1e6);
  std::printf("  %-52s %10.0f\n", "(iv) sandbox, allowlist, HTTP proxy (absolute URI)", proxied / 1e6);
  std::printf("  proxy cost: iii/i = %.2f, iii/ii = %.2f (aim: cost under 10%%, ratio >= 0.90)\n", transparent / host,
              transparent / all);
  std::printf("  the engine's cpu through the transparent proxy: %.2f s per GiB\n", cpu_per_gib);
  // At a link speed the internet gives (curl caps the rate at 100 MB/s), the
  // same download from the host and through the proxy.
  const std::string capped = "curl -sS --limit-rate 100M -o /dev/null -w '%{speed_download}' ";
  const std::string small = std::to_string(std::min(mib, 256) << 20);
  const double host_capped = median3([&] { return number(shell_out(capped + "http://203.0.113.10/bytes/" + small)); });
  const double transparent_capped =
      median3([&] { return number(in_sandbox(listed, capped + "--noproxy '*' http://allowed.test/bytes/" + small)); });
  std::printf("  %-52s %10.0f\n", "(v) from the host, at 100 MB/s", host_capped / 1e6);
  std::printf("  %-52s %10.0f\n", "(vi) transparent proxy, at 100 MB/s", transparent_capped / 1e6);
  std::printf("  proxy cost at 100 MB/s: vi/v = %.2f\n", transparent_capped / host_capped);

  const std::string n = std::to_string(connections);
  std::printf("\nconnections per second (%s sequential HTTP/1.0 requests), median of 3\n", n.c_str());
  const double c_host =
      median3([&] { return number(shell_out("python3 " + host_dir + "/connect.py 203.0.113.10 80 " + n)); });
  const double c_all = median3([&] { return number(in_sandbox(open, "python3 connect.py 203.0.113.10 80 " + n)); });
  const double c_proxy = median3([&] { return number(in_sandbox(listed, "python3 connect.py allowed.test 80 " + n)); });
  std::printf("  %-52s %10.0f\n", "(i) from the host", c_host);
  std::printf("  %-52s %10.0f\n", "(ii) sandbox, network all", c_all);
  std::printf("  %-52s %10.0f\n", "(iii) sandbox, allowlist, transparent proxy", c_proxy);

  std::printf("\nDNS answer time (%s queries), microseconds: median p95\n", n.c_str());
  std::printf("  %-52s %s", "the world's DNS, from the host",
              shell_out("python3 " + host_dir + "/dns.py " + mayura::testing::World::kDnsAddress + " allowed.test " + n)
                  .c_str());
  std::printf("  %-52s %s", "allowlist sandbox, an allowed name",
              in_sandbox(listed, "python3 dns.py 198.18.0.1 allowed.test " + n).c_str());
  std::printf("  %-52s %s", "allowlist sandbox, a refused name",
              in_sandbox(listed, "python3 dns.py 198.18.0.1 other.test " + n).c_str());
  std::printf("  %-52s %s", "network all sandbox (passed on to the world's DNS)",
              in_sandbox(open, "python3 dns.py 198.18.0.1 allowed.test " + n).c_str());
  shell_out("rm -rf " + host_dir);
  return 0;
}
