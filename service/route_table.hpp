#pragma once
// Every resource of the HTTP API in one table: its method and path, how the
// server serves it, and which bound its body has. The server's dispatch,
// the routes' own and the API's tests all read this one table.

#include <boost/beast/http/verb.hpp>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::service {

// How the server answers a resource.
enum class Serving {
  metrics,       // the Prometheus text, at once
  exec,          // streamed as NDJSON (exec_stream)
  run,           // streamed as NDJSON (exec_stream)
  file_call,     // on the provider's async forms: no thread waits for the sandbox
  command_wait,  // a background command's end, waited for on its watch: no thread waits
  attach,        // a WebSocket on a background command (command_attach.hpp)
  blocking,      // a blocking call of the provider's, on the server's pool
};

enum class Resource {
  metrics,
  health,
  features,
  sandboxes,
  create,
  run,
  details,
  release,
  exec,
  read,
  write,
  remove,
  list,
  url,
  network,
  pause,
  resume,
  snapshot,
  fork,
  snapshots,
  delete_snapshot,
  volumes,
  create_volume,
  delete_volume,
  screenshot,
  cursor,
  desktop_input,
  commands,
  start_command,
  command,
  command_output,
  command_input,
  command_signal,
  command_resize,
  command_stop,
  command_wait,
  command_attach,
};

struct Route {
  boost::beast::http::verb method;
  // "/v1/sandboxes/{id}/files": {id} stands for any sandbox's id (or a
  // snapshot's or volume's name), {command} for a background command's.
  std::string_view path;
  Resource resource;
  Serving serving;
  bool file_body = false;  // bounded by the service's file limit, not its JSON one
};

// The table, in the order the HTTP API's document lists it.
std::span<const Route> route_table();

// A request's target, decoded.
struct Target {
  std::vector<std::string> segments;
  std::map<std::string, std::string> params;
};
std::optional<Target> parse_target(std::string_view target);

// What a request's method and target name: a route; or a path the table
// has, but not with this method; or none; or a target that is no URL path.
struct RouteMatch {
  enum class Kind { route, wrong_method, unknown_path, malformed } kind = Kind::unknown_path;
  const Route* route = nullptr;  // Kind::route's
  Target target;
  std::string id;       // the {id} segment, where the path has one (a wrong method's too)
  std::string command;  // the {command} segment, likewise
};
RouteMatch match_route(boost::beast::http::verb method, std::string_view target);

}  // namespace mayura::service
