// Published ports: url(port) reaches a server on the sandbox's loopback
// through the engine's listener on 127.0.0.1. Each test runs in a network
// namespace of its own (entered before the engine starts, so the engine's
// 127.0.0.1 is that one's): nothing is sent outside what the test made.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness.hpp"
#include "mayura/netfilter/nftables.hpp"

namespace mayura::testing {
namespace {

class PortsTest : public NativeTest {
 protected:
  void SetUp() override {
    enter_own_network_namespace();
    NativeTest::SetUp();
  }
  void TearDown() override {
    NativeTest::TearDown();
    EXPECT_EQ(listening_sockets(), 0) << "a listening socket was left";
  }

  // TCP sockets listening in the test's namespace.

  static int port_of(const std::string& url) {
    EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
    return std::stoi(url.substr(url.rfind(':') + 1));
  }

  // A connected socket to 127.0.0.1:port, with a receive bound so a hang
  // fails the test instead of stopping it.
  static int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval bound{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      return -1;
    }
    return fd;
  }

  static std::string read_all(int fd, int& error) {
    std::string got;
    char buf[65536];
    error = 0;
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        got.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0) error = errno;
      return got;
    }
  }

  // Starts `server` in the sandbox, left running, and waits until 127.0.0.1:port answers there.
  void serve(const Sandbox& s, const std::string& server, int port) {
    sh(s, "setsid " + server + " >/dev/null 2>&1 < /dev/null &");
    sh(s, "for i in $(seq 100); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", " +
              std::to_string(port) + "))' 2>/dev/null && exit 0; sleep 0.05; done; exit 1");
  }
};

TEST_F(PortsTest, AServerOnTheSandboxsLoopbackAnswersThroughUrl) {
  CreateOptions c;
  c.ports = {8000};
  auto s = create(c);
  EXPECT_TRUE(sandboxes().features().ports);
  s.write_file("index.html", "hello from inside\n");
  serve(s, "python3 -m http.server 8000 --bind 127.0.0.1", 8000);
  const int fd = connect_to(port_of(s.url(8000)));
  ASSERT_GE(fd, 0) << std::strerror(errno);
  const std::string request = "GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  int error = 0;
  const std::string reply = read_all(fd, error);
  ::close(fd);
  EXPECT_EQ(error, 0);
  EXPECT_EQ(reply.rfind("HTTP/1.0 200", 0), 0u) << reply;
  EXPECT_NE(reply.find("hello from inside"), std::string::npos) << reply;
}

TEST_F(PortsTest, BytesAndHalfClosesPassBothWays) {
  CreateOptions c;
  c.ports = {9000};
  auto s = create(c);
  // echoes until the client ends its side, then ends its own
  s.write_file("echo.py",
               "import socket\n"
               "l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
               "l.bind(('127.0.0.1', 9000)); l.listen()\n"
               "while True:\n"
               "    c, _ = l.accept()\n"
               "    while True:\n"
               "        d = c.recv(65536)\n"
               "        if not d: break\n"
               "        c.sendall(d)\n"
               "    c.close()\n");
  serve(s, "python3 echo.py", 9000);
  const int port = port_of(s.url(9000));
  std::string payload;
  for (int i = 0; i < (1 << 20); ++i) payload.push_back(static_cast<char>(i * 7));
  const int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  std::string echoed;
  int error = 0;
  std::thread reader([&] { echoed = read_all(fd, error); });
  std::size_t sent = 0;
  while (sent < payload.size()) {
    const ssize_t n = ::send(fd, payload.data() + sent, payload.size() - sent, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  reader.join();
  ::close(fd);
  EXPECT_EQ(error, 0);
  EXPECT_EQ(echoed.size(), payload.size());
  EXPECT_TRUE(echoed == payload);
}

TEST_F(PortsTest, APortWithNothingListeningIsRefusedNotHung) {
  CreateOptions c;
  c.ports = {7000};
  auto s = create(c);
  // The engine's listener accepts, finds nothing listening inside and resets
  // the connection at once: no timeout, no data. The reset may overtake the
  // connecting thread (a slow machine wakes it after the RST has arrived),
  // and then connect itself reports it.
  const int fd = connect_to(port_of(s.url(7000)));
  int error = errno;
  std::string got;
  if (fd >= 0) {
    got = read_all(fd, error);
    ::close(fd);
  }
  EXPECT_EQ(got, "");
  EXPECT_EQ(error, ECONNRESET) << std::strerror(error);
}

TEST_F(PortsTest, OnlyPortsAskedForArePublishedAndReleaseClosesThem) {
  CreateOptions c;
  c.ports = {8080};
  auto s = create(c);
  EXPECT_EQ(reason_of([&] { s.url(8081); }), Reason::INVALID_INPUT);
  const int port = port_of(s.url(8080));
  EXPECT_EQ(listening_sockets(), 1);
  s.release();
  EXPECT_EQ(reason_of([&] { s.url(8080); }), Reason::GONE);
  EXPECT_EQ(connect_to(port), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  EXPECT_EQ(listening_sockets(), 0);
}

// Any local user could connect to a listener on 127.0.0.1: the kernel lets
// only the port's owner and root through, and refuses everyone else.
TEST_F(PortsTest, APublishedPortAnswersItsOwnerAndRootAndRefusesEveryoneElse) {
  CreateOptions c;
  c.ports = {8000};
  c.ports_owner = 65534;
  auto s = create(c);
  s.write_file("index.html", "hello from inside\n");
  serve(s, "python3 -m http.server 8000 --bind 127.0.0.1", 8000);
  const int port = port_of(s.url(8000));
  EXPECT_NE(fetch_as(65534, port).find("hello from inside"), std::string::npos);
  EXPECT_NE(fetch_as(0, port).find("hello from inside"), std::string::npos);
  EXPECT_EQ(fetch_as(65533, port), "refused");
  EXPECT_EQ(fetch_as(1000, port), "refused");
  // The refusal is the engine's rule: the table names the port and its owner.
  const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  char table[64];
  std::snprintf(table, sizeof table, "mayura_ports_%08x", options().id_base);
  const netfilter::NftResult listed = netfilter::run_nft(self, std::string("list table ip ") + table);
  ::close(self);
  ASSERT_TRUE(listed.ok) << listed.error;
  EXPECT_NE(listed.output.find(std::to_string(port) + " . 65534"), std::string::npos) << listed.output;
  // Released: the listener and the table are gone (the teardown checks the
  // table), and nobody reaches the port any more.
  s.release();
  EXPECT_EQ(fetch_as(65534, port), "refused");
}

TEST_F(PortsTest, ASandboxWithoutPortsListensNowhere) {
  auto s = create();
  EXPECT_EQ(sh(s, "echo ok"), "ok\n");
  EXPECT_EQ(listening_sockets(), 0);
}

}  // namespace
}  // namespace mayura::testing
