// Networks, in a world of the test's own: the test enters a fresh network
// namespace (the "host"), and tests/world makes the "internet" as a further
// namespace inside it, with DNS, HTTP and TLS servers for made-up names on
// documentation addresses. The engine is told to resolve through that
// world's DNS and to take its range as public. Nothing is sent anywhere else.

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <mutex>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "harness.hpp"
#include "mayura/netfilter/nftables.hpp"
#include "mayura/netfilter/upstream_dns.hpp"
#include "tests/world/world.hpp"

namespace mayura::testing {
namespace {

using namespace std::chrono_literals;

// Connects to address:port from the calling thread's namespace; whether it
// could.
bool connects(const char* address, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, address, &to.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  ::close(fd);
  return ok;
}

class NetworkTest : public NativeTest {
 protected:
  void SetUp() override {
    enter_own_network_namespace();
    world_.emplace();  // before the snapshot: its namespace is the test's, not the engine's
    NativeTest::SetUp();
    options().dns_servers = {World::kDnsAddress};
    options().public_ranges = {"203.0.113.0/24"};
    limits_.network = {NetworkKind::none, NetworkKind::allowlist, NetworkKind::all};
  }
  void TearDown() override {
    NativeTest::TearDown();
    world_.reset();
    EXPECT_EQ(listening_sockets(), 0) << "a listening socket was left in the host's namespace";
  }

  World& world() { return *world_; }

  Sandbox allowing(std::vector<std::string> domains) {
    CreateOptions c;
    c.network = Network::allow_only(std::move(domains));
    return with_cert(create(c));
  }
  Sandbox with_cert(Sandbox s) {
    s.write_file("cert.pem", world().certificate_pem());
    return s;
  }

  // Runs a shell script; returns its result without judging it.
  static ExecResult run(const Sandbox& s, const std::string& script) {
    ExecOptions o;
    o.timeout_ms = 60000;
    return s.exec({"/bin/sh", "-c", script}, o);
  }

  // Whether curl's exit code says the connection was refused or reset
  // (7, 55, 56), never answered.
  static bool refused(int code) { return code == 7 || code == 55 || code == 56; }

  // curl's output and exit code, bounded so a hang fails instead of waiting.
  static std::pair<int, std::string> curl(const Sandbox& s, const std::string& args) {
    const ExecResult r = run(s, "curl -sS --max-time 20 --cacert cert.pem " + args);
    return {r.exit_code.value_or(-1), r.stdout + r.stderr};
  }

  bool world_was_asked(const std::string& name) {
    const auto q = world().dns_queries();
    return std::any_of(q.begin(), q.end(), [&](const std::string& n) { return n == name || n == name + "."; });
  }

 private:
  std::optional<World> world_;
};

TEST_F(NetworkTest, AllowedNamesConnectOn80And443AndAnOddPortTransparently) {
  const Sandbox s = allowing({"allowed.test", "*.allowed.test:8081", "secure.test"});
  auto [code, out] = curl(s, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("hello from 203.0.113.10:80 host=allowed.test"), std::string::npos) << out;
  std::tie(code, out) = curl(s, "--noproxy '*' http://deep.sub.allowed.test:8081/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(":8081 host=deep.sub.allowed.test:8081"), std::string::npos) << out;
  // TLS end to end: the engine only splices, so the certificate is the world's.
  std::tie(code, out) = curl(s, "--noproxy '*' -o /dev/null -w '%{http_code}' https://secure.test/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "200");
  // The name resolved inside to a synthetic address, never to the world's.
  const std::string addresses = run(s, "getent ahostsv4 allowed.test | head -1").stdout;
  EXPECT_EQ(addresses.rfind("198.1", 0), 0u) << addresses;
}

TEST_F(NetworkTest, AllowedNamesConnectThroughTheProxyVariables) {
  const Sandbox s = allowing({"allowed.test:8081", "secure.test"});
  // curl takes http_proxy for http:// (an absolute-URI request) and
  // HTTPS_PROXY for https:// (CONNECT); the engine set both.
  auto [code, out] = curl(s, "-v http://allowed.test:8081/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("hello from 203.0.113.10:8081"), std::string::npos) << out;
  EXPECT_NE(out.find("198.18.0.1"), std::string::npos) << "not through the proxy: " << out;
  std::tie(code, out) = curl(s, "-v -o /dev/null https://secure.test/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("CONNECT secure.test:443"), std::string::npos) << out;
}

TEST_F(NetworkTest, OtherNamesFailAtOnceAndNeverReachTheWorldsDns) {
  const Sandbox s = allowing({"allowed.test"});
  // "At once" is in the answers, not on a clock: the name is refused
  // (NXDOMAIN: EAI_NONAME), never left unanswered (a timeout: EAI_AGAIN), and
  // the proxy answers 403 (a hang would end curl with 28, its timeout).
  s.write_file("lookup.py",
               "import socket, sys\n"
               "try:\n"
               "    socket.getaddrinfo(sys.argv[1], 80, socket.AF_INET); print('resolved')\n"
               "except socket.gaierror as e:\n"
               "    print(e.errno)\n");
  const std::string refused = std::to_string(EAI_NONAME) + "\n";
  for (const std::string_view name_view : {"other.test", "allowed.test.evil.test", "allowedxtest.evil.test", "test"}) {
    const std::string name(name_view);
    const ExecResult r = run(s, "getent hosts " + name);
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.stdout;  // 2: not found
    EXPECT_EQ(run(s, "python3 lookup.py " + name).stdout, refused) << name << ": not refused by the DNS server";
    auto [code, out] = curl(s, "--noproxy '*' http://" + name + "/");
    EXPECT_EQ(code, 6) << name << ": " << out;  // could not resolve
    std::tie(code, out) = curl(s, "-o /dev/null -w '%{http_code}' http://" + name + "/");
    EXPECT_EQ(code, 0) << name << ": " << out;  // an answer, 403, not a timeout (28)
    EXPECT_EQ(out, "403") << name;
    std::tie(code, out) = curl(s, "https://" + name + "/");
    EXPECT_EQ(code, 56) << name << ": " << out;  // the CONNECT refused with 403, not a timeout (28)
    EXPECT_NE(out.find("403"), std::string::npos) << name << ": " << out;
    EXPECT_FALSE(world_was_asked(name)) << name;
  }
  EXPECT_EQ(world().connections(), 0u);
}

TEST_F(NetworkTest, AddressesUdpAndRawSocketsReachNothing) {
  const Sandbox s = allowing({"allowed.test"});
  // An address, directly and through the proxy.
  auto [code, out] = curl(s, "--noproxy '*' --connect-timeout 5 http://203.0.113.10/");
  EXPECT_EQ(code, 7) << out;  // no route: at once
  std::tie(code, out) = curl(s, "-o /dev/null -w '%{http_code}' http://203.0.113.10/");
  EXPECT_EQ(out, "403");
  std::tie(code, out) = curl(s, "-o /dev/null -w '%{http_code}' http://[::ffff:203.0.113.10]/");
  EXPECT_EQ(out, "403");
  // UDP, to the world and to an allowed name's address; a raw socket.
  s.write_file("probe.py",
               "import socket\n"
               "out = []\n"
               "for host in ('203.0.113.10', 'allowed.test'):\n"
               "    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "    try:\n"
               "        u.sendto(b'x', (host, 5353)); out.append('sent')\n"
               "    except OSError as e:\n"
               "        out.append('refused')\n"
               "try:\n"
               "    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); out.append('raw')\n"
               "except OSError:\n"
               "    out.append('noraw')\n"
               "print(' '.join(out))\n");
  const ExecResult r = run(s, "python3 probe.py");
  EXPECT_EQ(r.stdout, "refused sent noraw\n") << r.stderr;  // the synthetic address is local: it goes nowhere
  // A datagram of the host's own to the same echo, sent after the sandbox's
  // and through the same last link: once it has arrived, a datagram of the
  // sandbox's that got out would have too. Its arrival is the event (the
  // bound only keeps a lost control from hanging the test), and it must be
  // the only one.
  {
    const int u = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in echo{};
    echo.sin_family = AF_INET;
    echo.sin_port = htons(5353);
    ::inet_pton(AF_INET, "203.0.113.10", &echo.sin_addr);
    ASSERT_EQ(::sendto(u, "c", 1, 0, reinterpret_cast<sockaddr*>(&echo), sizeof echo), 1);
    ::close(u);
  }
  for (int i = 0; i < 3000 && world().udp_received() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(world().udp_received(), 1u) << "only the host's control datagram reached the world";
  EXPECT_EQ(world().connections(), 0u);
}

TEST_F(NetworkTest, AnAllowedNameThatResolvesToAForbiddenAddressIsRefused) {
  const Sandbox s = allowing({"private.test", "loopback.test", "metadata.test", "host.test"});
  // Something listens on the host's loopback and its world address: it must hear nothing.
  HostListener listener(80);
  for (const std::string_view name_view : {"private.test", "loopback.test", "metadata.test", "host.test"}) {
    const std::string name(name_view);
    auto [code, out] = curl(s, "--noproxy '*' http://" + name + "/");
    // refused, reset (while receiving, or while still sending on a slow
    // machine), or closed empty: never an answer
    EXPECT_TRUE(refused(code) || code == 52) << name << ": " << code << " " << out;
    std::tie(code, out) = curl(s, "-o /dev/null -w '%{http_code}' http://" + name + "/");
    EXPECT_EQ(out, "502") << name;
  }
  EXPECT_EQ(listener.take(), 0) << "a connection from the sandbox reached the host's listener";
  // and it does hear what reaches it: its loopback and its world address
  ASSERT_TRUE(connects("127.0.0.1", 80));
  ASSERT_TRUE(connects(World::kHostAddress, 80));
  EXPECT_EQ(listener.take(), 2);
}

TEST_F(NetworkTest, APortRuleAllowsThatPortOnly) {
  const Sandbox s = allowing({"allowed.test:8081"});
  auto [code, out] = curl(s, "--noproxy '*' http://allowed.test:8081/");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = curl(s, "--noproxy '*' http://allowed.test/");
  EXPECT_TRUE(refused(code)) << code << " " << out;
  std::tie(code, out) = curl(s, "-o /dev/null -w '%{http_code}' http://allowed.test/");
  EXPECT_EQ(out, "403");
}

// A name without a port is reachable on the web's ports only: the world's
// server on 8081 answers nobody who allowed just the name, through either
// path, while 80 answers.
TEST_F(NetworkTest, ANameWithoutAPortReachesTheWebsPortsOnly) {
  const Sandbox s = allowing({"allowed.test"});
  auto [code, out] = curl(s, "--noproxy '*' http://allowed.test:8081/");
  EXPECT_TRUE(refused(code)) << code << " " << out;
  std::tie(code, out) = curl(s, "-o /dev/null -w '%{http_code}' http://allowed.test:8081/");
  EXPECT_EQ(out, "403");
  EXPECT_EQ(world().connections(), 0u);  // neither reached the world
  std::tie(code, out) = curl(s, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 0) << out;
}

TEST_F(NetworkTest, SetNetworkChangesWhatARunningSandboxReaches) {
  const Sandbox s = allowing({"allowed.test"});
  // A slow download under way is cut when its name stops being allowed. The
  // client reads steadily (curl's --limit-rate would sleep on a burst and
  // notice the reset only much later).
  s.write_file("slow.py",
               "import socket, time\n"
               "c = socket.create_connection(('allowed.test', 80))\n"
               "c.sendall(b'GET /bytes/1000000000 HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n')\n"
               "try:\n"
               "    while c.recv(4096): time.sleep(0.01)\n"
               "    print('ended')\n"
               "except OSError as e:\n"
               "    print('cut', e.errno)\n");
  ExecOptions slow;
  slow.timeout_ms = 60000;
  auto download = std::async(std::launch::async, [&] { return s.exec({"python3", "slow.py"}, slow); });
  for (int i = 0; i < 200 && world().connections() == 0; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_EQ(world().connections(), 1u);
  s.set_network(Network::allow_only({"other.test"}));
  ASSERT_EQ(download.wait_for(20s), std::future_status::ready) << "the connection was not cut";
  EXPECT_EQ(download.get().stdout, "cut 104\n");  // ECONNRESET
  auto [code, out] = curl(s, "--noproxy '*' http://other.test/");
  EXPECT_EQ(code, 0) << out;
  std::tie(code, out) = curl(s, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 6) << out;
  // none: nothing resolves, nothing connects, and the proxy variables go.
  s.set_network(Network::none());
  std::tie(code, out) = curl(s, "http://other.test/");
  EXPECT_NE(code, 0) << out;
  EXPECT_EQ(run(s, "env | grep -ci proxy").stdout, "0\n");
  // all, and back.
  s.set_network(Network::all());
  std::tie(code, out) = curl(s, "http://203.0.113.11/");
  EXPECT_EQ(code, 0) << out;
  s.set_network(Network::allow_only({"allowed.test"}));
  std::tie(code, out) = curl(s, "http://allowed.test/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(links_named("mayura").empty());
}

TEST_F(NetworkTest, AKindNotListedCannotBeSetLater) {
  limits_.network = {NetworkKind::none, NetworkKind::allowlist};
  const Sandbox s = allowing({"allowed.test"});
  EXPECT_EQ(reason_of([&] { s.set_network(Network::all()); }), Reason::PERMISSION_DENIED);
  EXPECT_EQ(reason_of([&] { s.set_network(Network::allow_only({"*.test"})); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.set_network(Network::allow_only({})); }), Reason::INVALID_INPUT);
  auto [code, out] = curl(s, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 0) << out;  // unchanged
}

TEST_F(NetworkTest, AllReachesTheWorldButNotTheHostOtherSandboxesOrMetadata) {
  CreateOptions c;
  c.network = Network::all();
  const Sandbox a = with_cert(create(c));
  const Sandbox b = create(c);
  EXPECT_EQ(links_named("mayura").size(), 2u);
  auto [code, out] = curl(a, "http://203.0.113.10:8081/");
  EXPECT_EQ(code, 0) << out;
  // names through the engine's DNS forwarder, to the world's DNS
  std::tie(code, out) = curl(a, "https://secure.test/ -o /dev/null -w '%{http_code}'");
  EXPECT_EQ(out, "200");
  EXPECT_TRUE(world_was_asked("secure.test"));
  // A service of the host, on every address it has: refused at once.
  const HostListener listener(9000);
  // Each sandbox's own address and its gateway (the host's end of its veth).
  const std::string where =
      "import socket, struct\n"
      "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect(('203.0.113.10', 9))\n"
      "gw = [l.split()[2] for l in open('/proc/net/route') if l.split()[1] == '00000000'][0]\n"
      "print(u.getsockname()[0], socket.inet_ntoa(struct.pack('<I', int(gw, 16))))\n";
  a.write_file("where.py", where);
  b.write_file("where.py", where);
  std::istringstream a_where(run(a, "python3 where.py").stdout), b_where(run(b, "python3 where.py").stdout);
  std::string a_address, a_gateway, b_address, b_gateway;
  a_where >> a_address >> a_gateway;
  b_where >> b_address >> b_gateway;
  ASSERT_FALSE(b_address.empty());
  EXPECT_NE(a_address, b_address);
  run(b, "setsid python3 -m http.server 7000 >/dev/null 2>&1 < /dev/null &");
  // b serves on its own address before a is refused it: a server not yet
  // listening would refuse a too.
  std::tie(code, out) =
      curl(b, "--retry 20 --retry-connrefused --retry-delay 0 -o /dev/null -w '%{http_code}' http://" + b_address +
                  ":7000/");
  ASSERT_EQ(out.rfind("200", 0), 0u) << out;  // stdout first; curl's retry notes follow
  // Refused at once: curl fails 7 (refused, or no route); a drop would leave
  // it waiting until its --max-time, and fail 28.
  for (const std::string& target :
       {std::string(World::kHostAddress) + ":9000", a_gateway + ":9000", b_gateway + ":9000",
        std::string("127.0.0.1:9000"), std::string("169.254.169.254:80"), b_address + ":7000"}) {
    std::tie(code, out) = curl(a, "http://" + target + "/");
    EXPECT_EQ(code, 7) << target << " was not refused at once: " << out;
  }
  // and b still serves after a's tries
  std::tie(code, out) = curl(b, "-o /dev/null -w '%{http_code}' http://" + b_address + ":7000/");
  EXPECT_EQ(out, "200");
  a.release();
  b.release();
  // Their links go with the removal that finishes after release returns.
  EXPECT_TRUE(eventually([] { return links_named("mayura").empty(); }));
}

TEST_F(NetworkTest, APublishedPortAnswersWithAnAllowlistToo) {
  CreateOptions c;
  c.network = Network::allow_only({"allowed.test"});
  c.ports = {8000};
  const Sandbox s = create(c);
  s.write_file("index.html", "inside\n");
  run(s, "setsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &");
  const std::string url = s.url(8000);
  std::string got;
  for (int i = 0; i < 100 && got.find("inside") == std::string::npos; ++i) {
    std::this_thread::sleep_for(50ms);
    got.clear();
    if (FILE* p = ::popen(("curl -s --max-time 5 " + url + "/index.html").c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof buf, p)) got += buf;
      ::pclose(p);
    }
  }
  EXPECT_EQ(got, "inside\n");
}

TEST_F(NetworkTest, APeerThatResetsAHalfClosedTransferEndsOnlyThatConnection) {
  const Sandbox s = allowing({"allowed.test"});
  // The engine is writing to the sandbox's socket when the sandbox half-closes
  // and then resets it: the engine's next write fails EPIPE (and would raise
  // SIGPIPE, ending the host process, if the engine let it).
  s.write_file("reset.py",
               "import socket, struct, time\n"
               "c = socket.create_connection(('allowed.test', 80))\n"
               "c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)\n"
               "c.sendall(b'GET /bytes/100000000 HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n')\n"
               "time.sleep(1)\n"
               "c.shutdown(socket.SHUT_WR)\n"
               "time.sleep(0.5)\n"
               "c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))\n"
               "c.close()\n");
  const auto engine_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
  };
  const auto before = engine_fds();
  EXPECT_EQ(run(s, "python3 reset.py").exit_code, 0);
  // The engine has dealt with the reset once it closed both ends of that
  // connection (its descriptors are back to what they were): only then does
  // a new connection show that it went on. (A SIGPIPE would have ended this
  // process, the engine's, with the test.)
  for (int i = 0; i < 3000 && engine_fds() != before; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine_fds(), before) << "the engine still holds the connection the sandbox reset";
  auto [code, out] = curl(s, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 0) << out;
}

TEST_F(NetworkTest, OneSandboxsConnectionsAreBoundedAndOthersKeepWorking) {
  const Sandbox greedy = allowing({"allowed.test"});
  const Sandbox other = allowing({"allowed.test"});
  auto engine_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator{});
  };
  const auto before = engine_fds();
  // Connections that never send a request head, far more than the bound
  // (256 a sandbox; 800 is enough to show it, and few enough to open well
  // within the engine's 30 s for a request head, which would otherwise free
  // slots). The holder says how many it opened; then it opens one
  // more that asks for a page. The engine takes connections in order, so by
  // the time that one is dealt with every earlier one was: at the bound it
  // is reset, and all but the bound of the held ones were reset before it
  // (each such one is readable). The holder says what became of the last
  // one and how many it saw closed, then holds the rest until the test is
  // done (a `go` file).
  greedy.write_file("hold.py",
                    "import os, resource, select, socket, time\n"
                    "held = []\n"
                    // a busy engine may fall behind resetting (its backlog full, a connect
                    // times out): go on trying, but for 20 s at most in all, well within
                    // the 30 s a request head has (a test that cannot open them fails)
                    // (a refused try counts for nothing: it tries again, a moment later)
                    "deadline = time.monotonic() + 20\n"
                    "want = min(800, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 32)\n"
                    "while len(held) < want and time.monotonic() < deadline:\n"
                    "    try: held.append(socket.create_connection(('198.18.0.1', 80), timeout=2))\n"
                    "    except OSError: time.sleep(0.001)\n"
                    "print('opened', len(held), flush=True)\n"
                    "try:\n"
                    "    last = socket.create_connection(('198.18.0.1', 80), timeout=30)\n"
                    "    last.sendall(b'GET http://allowed.test/ HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n')\n"
                    "    what = 'answered' if last.recv(1) else 'closed'\n"
                    "except (ConnectionResetError, BrokenPipeError): what = 'reset'\n"
                    "except OSError as e: what = type(e).__name__\n"
                    "print('last', what, flush=True)\n"
                    "p = select.poll()\n"
                    "for c in held: p.register(c, select.POLLIN)\n"
                    "print('closed', len(p.poll(0)), flush=True)\n"
                    "while not os.path.exists('go'): time.sleep(0.05)\n");
  std::mutex said_mutex;
  std::condition_variable said_changed;
  std::string said;
  bool holder_ended = false;
  ExecOptions o;
  // Every wait here ends well within ctest's 300 s, so that a holder that
  // never gets there fails with what it said instead of being killed mute.
  o.timeout_ms = 200000;
  o.on_stdout = [&](std::string_view chunk) {
    {
      std::lock_guard lock(said_mutex);
      said += chunk;
    }
    said_changed.notify_all();
  };
  auto holder = std::async(std::launch::async, [&] {
    ExecResult r = greedy.exec({"/bin/sh", "-c", "python3 hold.py"}, o);
    {
      std::lock_guard lock(said_mutex);
      holder_ended = true;
    }
    said_changed.notify_all();
    return r;
  });
  int opened = 0, closed = 0;
  char last[32] = {};
  {
    std::unique_lock lock(said_mutex);
    if (!said_changed.wait_for(
            lock, 150s,
            [&] { return holder_ended || (said.find("closed ") != std::string::npos && said.back() == '\n'); }) ||
        holder_ended) {
      lock.unlock();
      greedy.write_file("go", "");
      const ExecResult r = holder.get();
      FAIL() << "the holder never said what became of its connections (exit "
             << (r.exit_code ? std::to_string(*r.exit_code) : "none") << (r.timed_out ? ", timed out" : "")
             << "): " << said << r.stderr;
    }
    ASSERT_EQ(std::sscanf(said.c_str(), "opened %d\nlast %31s\nclosed %d\n", &opened, last, &closed), 3) << said;
  }
  // the holder really tried far more than the bound, and the engine kept no
  // more than the bound of them open
  RecordProperty("opened", opened);
  RecordProperty("closed", closed);
  EXPECT_GE(opened, 2 * 256) << said;
  EXPECT_STREQ(last, "reset") << "a sandbox at its bound was given one connection more: " << said;
  EXPECT_GE(closed, opened - 256) << said;
  EXPECT_LT(engine_fds() - before, 400) << "the engine holds a descriptor for every connection a sandbox opens";
  auto [code, out] = curl(other, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(holder.wait_for(0s), std::future_status::timeout) << "the holder let go before the checks were done";
  greedy.write_file("go", "");
  const ExecResult r = holder.get();
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
}

TEST_F(NetworkTest, AllCannotReachAHostPortPublishedByDnat) {
  // A Docker-style published port on the host: DNAT to a world address.
  const int host = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  ASSERT_TRUE(netfilter::run_nft(host,
                                 "table ip published {\n chain pre {\n"
                                 "  type nat hook prerouting priority dstnat; policy accept;\n"
                                 "  fib daddr type local tcp dport 8080 dnat to 203.0.113.10:80\n }\n}\n")
                  .ok);
  CreateOptions c;
  c.network = Network::all();
  const Sandbox s = create(c);
  // Refused at once (7), not dropped until curl's --max-time (28).
  auto [code, out] = curl(s, std::string("http://") + World::kHostAddress + ":8080/");
  EXPECT_EQ(code, 7) << out;
  std::tie(code, out) = curl(s, "http://203.0.113.10/");  // the world itself, straight
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(netfilter::run_nft(host, "delete table ip published\n").ok);
  ::close(host);
}

// The engine's lookups of allowed names share a few threads. A sandbox whose
// names never resolve (their DNS server is down) holds its own share of
// them and no more: another sandbox's lookup, asked while sixteen of the
// first one's wait, is answered while they still wait, not after they fail.
TEST_F(NetworkTest, ASandboxsStalledLookupsDoNotStallAnothersLookups) {
  options().dns_servers = {World::kStallingDnsAddress};
  // An unanswered lookup fails only after 20 s (two tries of 5 s each for
  // its A and its AAAA query), far longer than the other sandbox's answer
  // takes even on an emulated cpu: that answer came while every stalled
  // lookup still waited (each stalled curl leaves a file when it ends), so
  // it waited for none of them.
  options().dns_wait_s = 5;
  const Sandbox stalled = allowing({"*.stall.test"});
  const Sandbox other = allowing({"allowed.test"});
  run(stalled,
      "for i in $(seq 16); do setsid sh -c \"curl -s --noproxy '*' --max-time 120 http://n$i.stall.test/; "
      "touch ended-$i\" >/dev/null 2>&1 </dev/null & done");
  // Sixteen curls start on an emulated cpu beside two other tests in about
  // twenty seconds (seen in CI's VMs); two minutes is time for any of them.
  if (!eventually([&] { return world().stalled_dns_queries() >= 2; }, 120s)) {
    FAIL() << "the stalled sandbox's lookups never reached the DNS server (" << world().stalled_dns_queries()
           << " did); its processes:\n"
           << run(stalled, "ps -eo pid,stat,etime,args; ls").stdout;
  }
  auto [code, out] = curl(other, "--noproxy '*' http://allowed.test/");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("hello from 203.0.113.10:80"), std::string::npos) << out;
  // A lookup queued behind stalled ones could not end before the first of
  // them failed: the other sandbox's answer came while every one of them
  // still waited.
  for (const FileEntry& e : stalled.list()) {
    EXPECT_NE(e.name.rfind("ended-", 0), 0u) << "a stalled lookup ended before the other sandbox's answer: " << e.name;
  }
  // The stalled curls end with the sandbox.
}

}  // namespace
}  // namespace mayura::testing
