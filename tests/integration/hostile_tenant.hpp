#pragma once
// What the tests of hostile tenants stand on (hostile_tenants_test.cpp): the
// real mayurad started from its config file in a network namespace of the
// test's own, a blocking TLS client of its listener, and a process group
// killed whole.

#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cgroups.hpp"
#include "tests/support/exec_load.hpp"
#include "harness.hpp"
#include "http_client.hpp"

namespace mayura::testing {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using nlohmann::json;
using verb = boost::beast::http::verb;

inline constexpr unsigned short kTlsPort = 8443;
inline constexpr const char* kToken = "alice-0123456789abcdef";

// A TLS client of the daemon's listener, blocking, each read and write
// bounded by the socket's own timeouts.
class TlsClient {
 public:
  TlsClient() : context_(ssl::context::tls_client), stream_(io_, context_) {
    context_.set_verify_mode(ssl::verify_none);
    boost::system::error_code ec;
    stream_.lowest_layer().connect({asio::ip::make_address("127.0.0.1"), kTlsPort}, ec);
    if (ec) return;
    const timeval bound{10, 0};
    const int fd = stream_.lowest_layer().native_handle();
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    stream_.handshake(ssl::stream_base::client, ec);
    handshaken_ = !ec;
  }
  bool handshaken() const { return handshaken_; }
  bool send(const std::string& bytes) {
    boost::system::error_code ec;
    asio::write(stream_, asio::buffer(bytes), ec);
    return !ec;
  }
  // What comes until the server closes, or a read waits past its bound;
  // `closed` says which.
  std::string read_all(bool& closed) {
    std::string got;
    char buf[4096];
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = stream_.read_some(asio::buffer(buf), ec);
      got.append(buf, n);
      if (!ec) continue;
      closed = ec == asio::error::eof || ec == ssl::error::stream_truncated || ec == asio::error::connection_reset;
      return got;
    }
  }

 private:
  asio::io_context io_;
  ssl::context context_;
  ssl::stream<asio::ip::tcp::socket> stream_;
  bool handshaken_ = false;
};

// A process group running `sh -c command`, killed whole when this goes.
class Background {
 public:
  explicit Background(const std::string& command) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Background() {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  // Whether a process of the group runs `program` (its comm).
  bool runs(const std::string& program) const {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string pid = e.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (read_host(e.path() / "comm") != program + "\n") continue;
      // pid (comm) state ppid pgrp ...
      const std::string stat = read_host(e.path() / "stat");
      std::istringstream after_comm(stat.substr(std::min(stat.size(), stat.rfind(')') + 1)));
      std::string state, ppid, pgrp;
      after_comm >> state >> ppid >> pgrp;
      if (pgrp == std::to_string(pid_)) return true;
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
};

class HostileTenantTest : public NativeTest {
 protected:
  void SetUp() override {
    NativeTest::SetUp();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // as systemd is the daemon's
    enter_own_network_namespace();       // the TLS listener's 127.0.0.1 is the test's own
    char dir[] = "/tmp/mayura-hostile-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    ::chmod(dir, 0755);
    socket_ = dir_ + "/mayurad.sock";
  }
  void TearDown() override {
    stop();
    std::filesystem::remove_all(dir_);
    NativeTest::TearDown();
  }

  // mayurad with the test's places and `extra` settings, serving.
  void start(const json& extra) {
    const std::string config = dir_ + "/mayurad.json";
    std::ofstream(config) << daemon_config(options(), socket_, extra).dump();
    daemon_ = start_mayurad(MAYURAD_PATH, config, false);
    ASSERT_TRUE(wait_until_served(socket_)) << "mayurad did not serve " << socket_;
  }
  // SIGTERM: it releases every sandbox and exits 0.
  void stop() {
    if (daemon_ > 0) stop_mayurad(std::exchange(daemon_, -1), options());
  }
  json tls_settings() {
    make_certificate(dir_, "server");
    std::ofstream(dir_ + "/tokens") << "alice " << kToken << "\nuid:0 uid0-0123456789abcdef\n";
    ::chmod((dir_ + "/tokens").c_str(), 0600);
    return {{"listen", "127.0.0.1:" + std::to_string(kTlsPort)},
            {"certificate", dir_ + "/server.pem"},
            {"key", dir_ + "/server.key"},
            {"tokens", dir_ + "/tokens"}};
  }
  service::HttpAnswer call(verb method, const std::string& target, const std::string& body = {},
                           const std::string& token = {}) {
    service::HttpCall c;
    c.method = method;
    c.target = target;
    c.body = body;
    if (!body.empty()) c.content_type = "application/json";
    c.timeout = std::chrono::seconds(60);
    service::Endpoint endpoint = service::parse_endpoint(socket_);
    if (!token.empty()) {
      endpoint = service::parse_endpoint("https://127.0.0.1:" + std::to_string(kTlsPort));
      endpoint.token = token;
      endpoint.ca_file = dir_ + "/server.pem";
    }
    return service::http_call(endpoint, c);
  }
  long metric(const std::string& name) {
    const std::string text = call(verb::get, "/metrics").body;
    const auto at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::atol(text.c_str() + at + name.size() + 2);
  }
  // A well-behaved client's (root's) cycle: create, exec, release, each
  // answered as it should be.
  void well_behaved_cycle() {
    const auto other = call(verb::post, "/v1/sandboxes", R"({"lifetimeMs": 60000})");
    ASSERT_EQ(other.status, 201u) << other.body;
    const std::string other_id = json::parse(other.body).at("id");
    const auto ran = call(verb::post, "/v1/sandboxes/" + other_id + "/exec", R"({"argv": ["echo", "fine"]})");
    EXPECT_NE(ran.body.find("\"exitCode\":0"), std::string::npos) << ran.body;
    EXPECT_EQ(call(verb::delete_, "/v1/sandboxes/" + other_id).status, 204u);
  }
  // The sandbox's cgroup: the only one below the engine's root.
  std::string only_sandbox_cgroup() {
    std::string found;
    for (const auto& e : std::filesystem::directory_iterator(options().cgroup_root)) {
      if (e.is_directory()) found = e.path().filename();
    }
    return found;
  }

  std::string dir_;
  std::string socket_;
  pid_t daemon_ = -1;
};

}  // namespace mayura::testing
