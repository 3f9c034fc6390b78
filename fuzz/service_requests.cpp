// mayurad's request path without its sockets: raw bytes read as HTTP/1.1
// requests by Beast's parser with the server's limits, then routed as the
// server routes them (routes.hpp), against a provider whose sandboxes live
// in memory (files in a map; exec is never run). Properties: no reply but
// a real status; every JSON reply is JSON; every failure names a reason the
// remote provider knows; nothing throws out of the routes.
// Input: byte 0 picks the client (an admin or not), the rest is requests;
// "@ID" in a request stands for the id of the sandbox made last (ids are
// random, and a fuzzer could never guess one).

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <memory>

#include "fuzz.hpp"
#include "memory_provider.hpp"
#include "mayura/errors.hpp"
#include "mayura/provider.hpp"
#include "mayura/sandboxes.hpp"
#include "metrics.hpp"
#include "registry.hpp"
#include "routes.hpp"
#include "wire.hpp"

namespace http = boost::beast::http;
using namespace mayura;
using mayura::fuzz::MemoryProvider;

namespace {

struct Service {
  Sandboxes sandboxes;
  service::Registry registry{service::ClientQuota{4, 0}};
  service::Metrics metrics;
  service::Routes routes;
  Service()
      : sandboxes(create_sandboxes(std::make_shared<MemoryProvider>(), options())),
        routes(sandboxes, service::ServiceInfo{"memory", 60'000, {NetworkKind::none}}, registry, metrics, 64 * 1024,
               1 << 20) {}
  static SandboxesOptions options() {
    SandboxesOptions o;
    o.max_sandboxes = 8;
    o.max_lifetime_ms = 60'000;
    return o;
  }
};

// MAYURA_FUZZ_VERBOSE=1 shows each request's reply, to see what a corpus reaches.
void check_reply(const service::Reply& reply) {
  static const bool verbose = std::getenv("MAYURA_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "%u %s\n", reply.status, reply.body.substr(0, 160).c_str());
  FUZZ_CHECK(reply.status >= 200 && reply.status <= 599);
  // Accepted: a request the routes took (one is enough; a corpus entry is
  // several, the later ones often refused on purpose).
  if (reply.status < 400) mayura::fuzz::accept();
  if (reply.content_type == "application/json" && !reply.body.empty()) {
    const auto body = nlohmann::json::parse(reply.body, nullptr, false);
    FUZZ_CHECK(!body.is_discarded());
    if (reply.status >= 400) {
      FUZZ_CHECK(body.is_object() && body.contains("reason") && body["reason"].is_string());
      FUZZ_CHECK(service::reason_from_name(body["reason"].get<std::string>()).has_value());
    }
  }
}

service::Reply run_file_call(service::Routes& routes, const service::FileCall& call, const std::string& body) {
  std::exception_ptr error;
  std::string data;
  std::vector<FileEntry> entries;
  try {
    switch (call.kind) {
      case service::FileCall::Kind::read: data = call.sandbox.read_file(call.path, call.read); break;
      case service::FileCall::Kind::write: call.sandbox.write_file(call.path, body); break;
      case service::FileCall::Kind::remove: call.sandbox.remove(call.path); break;
      case service::FileCall::Kind::list: entries = call.sandbox.list(call.path); break;
    }
  } catch (...) {
    error = std::current_exception();
  }
  return routes.file_reply(call, error, std::move(data), entries);
}

// One request as the server serves it; false when the connection would end.
bool serve_one(Service& s, std::string& rest, std::string& last_id, const service::Client& client) {
  for (std::size_t at; !last_id.empty() && (at = rest.find("@ID")) != std::string::npos;) rest.replace(at, 3, last_id);
  std::string_view input = rest;
  const auto done_with_input = [&] { rest.erase(0, rest.size() - input.size()); };
  http::request_parser<http::string_body> parser;
  parser.eager(false);
  parser.header_limit(16 * 1024);
  parser.body_limit(1 << 20);
  boost::system::error_code ec;
  auto feed = [&](auto done) {
    while (!done()) {
      const std::size_t used = parser.put(boost::asio::buffer(input.data(), input.size()), ec);
      input.remove_prefix(used);
      if (ec == http::error::need_more) {
        // No more to come: what is there is all the request has.
        if (input.empty() || used == 0) {
          parser.put_eof(ec);
          return !ec && done();
        }
        ec = {};
        continue;
      }
      if (ec) return false;
      if (used == 0 && !done()) return false;
    }
    return true;
  };
  const bool header = feed([&] { return parser.is_header_done(); });
  done_with_input();
  if (!header) return false;
  const service::RouteMatch route = service::match_route(parser.get().method(), parser.get().target());
  const std::size_t limit = s.routes.body_limit(route);
  if (parser.content_length() && *parser.content_length() > limit) return false;
  parser.body_limit(limit);
  parser.eager(true);
  input = rest;
  const bool whole = feed([&] { return parser.is_done(); });
  done_with_input();
  if (!whole) return false;
  auto req = parser.release();

  // As the server does, by the route table's Serving.
  switch (route.route ? route.route->serving : service::Serving::blocking) {
    case service::Serving::exec:
      try {
        (void)s.routes.exec_target(route.id, req.body(), client);
        mayura::fuzz::accept();
      } catch (const SandboxError&) {
      }
      return req.keep_alive();
    case service::Serving::metrics:
    case service::Serving::run: return req.keep_alive();
    case service::Serving::command_wait: {
      // (The server's timer only asks command_ended until the timeout.)
      const auto wait = s.routes.command_wait(route, client);
      check_reply(wait.index() == 1 ? std::get<1>(wait) : s.routes.command_wait_reply(std::get<0>(wait)));
      return req.keep_alive();
    }
    case service::Serving::attach: {
      // What the server checks before the upgrade (the WebSocket itself is
      // Beast's): a refusal has its reason; an attachment names a command.
      const auto attach = s.routes.command_attach(route, client, boost::beast::websocket::is_upgrade(req));
      if (attach.index() == 1) check_reply(std::get<1>(attach));
      else mayura::fuzz::accept();
      return false;
    }
    case service::Serving::file_call: {
      const auto call = s.routes.file_call(route, client);
      check_reply(call.index() == 1 ? std::get<1>(call) : run_file_call(s.routes, std::get<0>(call), req.body()));
      return req.keep_alive();
    }
    case service::Serving::blocking: break;
  }
  const service::Reply reply = s.routes.handle(route, req.body(), client);
  check_reply(reply);
  if (reply.status == 201) {
    const auto made = nlohmann::json::parse(reply.body, nullptr, false);
    if (made.is_object() && made.contains("id") && made["id"].is_string()) last_id = made["id"].get<std::string>();
  }
  return req.keep_alive();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Service s;
  const service::Client client{data[0] & 1 ? "uid:0" : "uid:1000", (data[0] & 1) != 0, data[0] & 1 ? 0u : 1000u};
  std::string rest(mayura::fuzz::bytes(data + 1, size - 1));
  std::string last_id;
  for (int n = 0; n < 32 && !rest.empty(); ++n) {
    if (!serve_one(s, rest, last_id, client)) break;
  }
  s.sandboxes.close();
  return 0;
}
