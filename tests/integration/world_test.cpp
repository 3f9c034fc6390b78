// The test world itself: from the test's own network namespace ("the host"),
// its DNS, HTTP, HTTPS and UDP servers answer as World promises, and once it
// is gone nothing of it is left.

#include "world.hpp"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netdb.h>
#include <resolv.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "harness.hpp"

namespace mayura::testing {
namespace {

using namespace std::chrono_literals;

struct Answer {
  int rcode = -1;
  std::vector<std::string> a;
};

// One A query to the world's DNS through libresolv, from the host.
Answer resolve(const std::string& name) {
  struct __res_state state {};
  if (res_ninit(&state) != 0) return {};
  state.nscount = 1;
  state.nsaddr_list[0].sin_family = AF_INET;
  state.nsaddr_list[0].sin_port = htons(53);
  state.nsaddr_list[0].sin_addr.s_addr = ::inet_addr(World::kDnsAddress);
  state.retrans = 2;
  state.retry = 2;
  unsigned char reply[1024];
  const int n = res_nquery(&state, name.c_str(), ns_c_in, ns_t_a, reply, sizeof reply);
  Answer answer;
  if (n < 0) {
    if (state.res_h_errno == HOST_NOT_FOUND) answer.rcode = ns_r_nxdomain;
    res_nclose(&state);
    return answer;
  }
  res_nclose(&state);
  ns_msg msg;
  if (ns_initparse(reply, n, &msg) != 0) return answer;
  answer.rcode = ns_msg_getflag(msg, ns_f_rcode);
  for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) == 0 && ns_rr_type(rr) == ns_t_a && ns_rr_rdlen(rr) == 4) {
      char text[INET_ADDRSTRLEN];
      ::inet_ntop(AF_INET, ns_rr_rdata(rr), text, sizeof text);
      answer.a.push_back(text);
    }
  }
  return answer;
}

int connected(int type, const char* address, std::uint16_t port) {
  const int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  timeval bound{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = ::inet_addr(address);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0)
      << address << ":" << port << ": " << std::strerror(errno);
  return fd;
}

// One HTTP exchange over TCP from the host: everything the server sent.
std::string http(const char* address, std::uint16_t port, const std::string& request) {
  const int fd = connected(SOCK_STREAM, address, port);
  EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[65536];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return got;
}

std::string body_of(const std::string& response) {
  const auto end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// curl's exit code, run from the host with the world's certificate trusted.
int curl(const World& world, const std::string& name, const std::string& dir) {
  const std::string ca = dir + "/ca.pem";
  std::ofstream(ca) << world.certificate_pem();
  ChildProcess c({"curl", "-sS", "--max-time", "20", "--cacert", ca, "--resolve", name + ":443:203.0.113.12",
                  "https://" + name + "/"},
                 dir + "/curl.log");
  const auto status = c.wait_for(30s);
  if (!status || !WIFEXITED(*status)) return -1;
  return WEXITSTATUS(*status);
}

std::vector<std::string> fds_of_this_process() {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    found.push_back(std::filesystem::read_symlink(e.path(), ec).string());
  }
  return found;
}

std::size_t threads_of_this_process() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

bool listens_on_tcp() {
  std::istringstream in(read_host("/proc/thread-self/net/tcp"));
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    f >> slot >> local >> remote >> state;
    if (state == "0A") return true;
  }
  return false;
}

class WorldTest : public ::testing::Test {
 protected:
  void SetUp() override { enter_own_network_namespace(); }
};

TEST_F(WorldTest, DnsAnswersItsTableToTheHostAndRecordsEveryName) {
  World world;
  const Answer allowed = resolve("allowed.test");
  EXPECT_EQ(allowed.rcode, ns_r_noerror);
  EXPECT_EQ(allowed.a, std::vector<std::string>{"203.0.113.10"});
  ASSERT_FALSE(world.dns_queries().empty());
  EXPECT_EQ(world.dns_queries().front(), "allowed.test");

  for (const auto& record : World::kDnsRecords) {
    EXPECT_EQ(resolve(std::string(record.name)).a, std::vector<std::string>{std::string(record.address)})
        << record.name;
  }
  const Answer unknown = resolve("unknown.test");
  EXPECT_EQ(unknown.rcode, ns_r_nxdomain);
  EXPECT_TRUE(unknown.a.empty());
  EXPECT_EQ(world.dns_queries().back(), "unknown.test");
  EXPECT_EQ(world.dns_queries().size(), World::kDnsRecords.size() + 2);
}

TEST_F(WorldTest, HttpServersSayHelloOnEveryAddressAndBothPorts) {
  World world;
  const std::string a = http("203.0.113.10", 80, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  EXPECT_EQ(a.rfind("HTTP/1.1 200 ", 0), 0u) << a;
  EXPECT_EQ(body_of(a), "hello from 203.0.113.10:80 host=allowed.test\n");
  const std::string b =
      http("203.0.113.11", 8081, "POST /x HTTP/1.1\r\nhost: other.test:8081\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(body_of(b), "hello from 203.0.113.11:8081 host=other.test:8081\n");
  EXPECT_EQ(world.connections(), 2u);
}

TEST_F(WorldTest, BytesAreStreamedExactlyAndClientsAreServedTogether) {
  World world;
  const std::string r = http("203.0.113.10", 80, "GET /bytes/1000000 HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
  EXPECT_NE(r.find("Content-Length: 1000000\r\n"), std::string::npos);
  EXPECT_EQ(body_of(r).size(), 1000000u);

  // Eight clients at once, each held open until all have connected: a
  // server that took them one by one would not accept the others.
  std::vector<int> fds;
  fds.reserve(8);
  for (int i = 0; i < 8; ++i) fds.push_back(connected(SOCK_STREAM, "203.0.113.12", 80));
  std::vector<std::thread> clients;
  std::vector<std::size_t> sizes(fds.size());
  for (std::size_t i = 0; i < fds.size(); ++i) {
    clients.emplace_back([&, i] {
      const std::string request = "GET /bytes/3000000 HTTP/1.1\r\nHost: x\r\n\r\n";
      ::send(fds[i], request.data(), request.size(), MSG_NOSIGNAL);
      std::string got;
      char buf[65536];
      ssize_t n;
      while ((n = ::recv(fds[i], buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<std::size_t>(n));
      sizes[i] = body_of(got).size();
      ::close(fds[i]);
    });
  }
  for (auto& c : clients) c.join();
  for (const auto size : sizes) EXPECT_EQ(size, 3000000u);
  EXPECT_EQ(world.connections(), 9u);
}

TEST_F(WorldTest, HttpsServesSecureTestWithTheWorldsCertificate) {
  World world;
  EXPECT_EQ(world.certificate_pem().rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
  EXPECT_EQ(curl(world, "secure.test", world.directory()), 0) << read_host(world.directory() + "/curl.log");
  EXPECT_EQ(curl(world, "allowed.test", world.directory()), 0) << read_host(world.directory() + "/curl.log");
  // A name the certificate does not carry: curl really checks it.
  EXPECT_EQ(curl(world, "other.test", world.directory()), 60) << read_host(world.directory() + "/curl.log");
}

TEST_F(WorldTest, UdpEchoAnswersAndCounts) {
  World world;
  const int fd = connected(SOCK_DGRAM, "203.0.113.11", 5353);
  for (const std::string message : {"one", "two", "three"}) {
    ASSERT_EQ(::send(fd, message.data(), message.size(), MSG_NOSIGNAL), static_cast<ssize_t>(message.size()));
    char buf[64];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), message);
  }
  ::close(fd);
  EXPECT_EQ(world.udp_received(), 3u);
}

TEST_F(WorldTest, ASecondWorldInTheSameHostFailsClearlyAndTheFirstGoesOn) {
  World world;
  try {
    World second;
    ADD_FAILURE() << "a second world0 was made";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("world0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(body_of(http("203.0.113.10", 8081, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")),
            "hello from 203.0.113.10:8081 host=a\n");
}

TEST_F(WorldTest, NothingIsLeftOnceItIsGone) {
  const auto fds_before = fds_of_this_process();
  const std::size_t threads_before = threads_of_this_process();
  std::string directory, world_ns;
  {
    World world;
    directory = world.directory();
    world_ns = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(world.netns())).string();
    EXPECT_NE(::if_nametoindex(World::kHostLink), 0u);
    EXPECT_EQ(body_of(http("203.0.113.12", 80, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")),
              "hello from 203.0.113.12:80 host=a\n");
  }
  // The link, by name in this thread's namespace (/sys/class/net shows the
  // namespace sysfs was mounted in, which is not this test's).
  EXPECT_EQ(::if_nametoindex(World::kHostLink), 0u);
  EXPECT_EQ(links_named(World::kHostLink), std::vector<std::string>());
  // The openssl child, killed and reaped: no child at all is left.
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_FALSE(listens_on_tcp());
  EXPECT_FALSE(std::filesystem::exists(directory)) << directory;
  // No fd holds the world's namespace, so the kernel frees it.
  const auto fds_after = fds_of_this_process();
  EXPECT_EQ(std::count(fds_after.begin(), fds_after.end(), world_ns), 0) << world_ns;
  EXPECT_EQ(fds_after.size(), fds_before.size());
  EXPECT_EQ(threads_of_this_process(), threads_before);
}

}  // namespace
}  // namespace mayura::testing
