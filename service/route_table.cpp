#include "route_table.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace mayura::service {
namespace {

using V = boost::beast::http::verb;
using R = Resource;
using S = Serving;

constexpr Route kRoutes[] = {
    {V::get, "/metrics", R::metrics, S::metrics},
    {V::get, "/v1/health", R::health, S::blocking},
    {V::get, "/v1/features", R::features, S::blocking},
    {V::get, "/v1/sandboxes", R::sandboxes, S::blocking},
    {V::post, "/v1/sandboxes", R::create, S::blocking},
    {V::post, "/v1/run", R::run, S::run},
    {V::get, "/v1/sandboxes/{id}", R::details, S::blocking},
    {V::delete_, "/v1/sandboxes/{id}", R::release, S::blocking},
    {V::post, "/v1/sandboxes/{id}/exec", R::exec, S::exec},
    {V::get, "/v1/sandboxes/{id}/files", R::read, S::file_call},
    {V::put, "/v1/sandboxes/{id}/files", R::write, S::file_call, true},
    {V::delete_, "/v1/sandboxes/{id}/files", R::remove, S::file_call},
    {V::get, "/v1/sandboxes/{id}/list", R::list, S::file_call},
    {V::get, "/v1/sandboxes/{id}/url", R::url, S::blocking},
    {V::put, "/v1/sandboxes/{id}/network", R::network, S::blocking},
    {V::post, "/v1/sandboxes/{id}/pause", R::pause, S::blocking},
    {V::post, "/v1/sandboxes/{id}/resume", R::resume, S::blocking},
    {V::post, "/v1/sandboxes/{id}/snapshot", R::snapshot, S::blocking},
    {V::post, "/v1/sandboxes/{id}/fork", R::fork, S::blocking},
    {V::get, "/v1/snapshots", R::snapshots, S::blocking},
    {V::delete_, "/v1/snapshots/{id}", R::delete_snapshot, S::blocking},
    {V::get, "/v1/volumes", R::volumes, S::blocking},
    {V::post, "/v1/volumes", R::create_volume, S::blocking},
    {V::delete_, "/v1/volumes/{id}", R::delete_volume, S::blocking},
    {V::get, "/v1/sandboxes/{id}/desktop/screenshot", R::screenshot, S::blocking},
    {V::get, "/v1/sandboxes/{id}/desktop/cursor", R::cursor, S::blocking},
    {V::post, "/v1/sandboxes/{id}/desktop/input", R::desktop_input, S::blocking},
    {V::get, "/v1/sandboxes/{id}/commands", R::commands, S::blocking},
    {V::post, "/v1/sandboxes/{id}/commands", R::start_command, S::blocking},
    {V::get, "/v1/sandboxes/{id}/commands/{command}", R::command, S::blocking},
    {V::get, "/v1/sandboxes/{id}/commands/{command}/output", R::command_output, S::blocking},
    {V::post, "/v1/sandboxes/{id}/commands/{command}/input", R::command_input, S::blocking},
    {V::post, "/v1/sandboxes/{id}/commands/{command}/signal", R::command_signal, S::blocking},
    {V::post, "/v1/sandboxes/{id}/commands/{command}/resize", R::command_resize, S::blocking},
    {V::post, "/v1/sandboxes/{id}/commands/{command}/stop", R::command_stop, S::blocking},
    {V::get, "/v1/sandboxes/{id}/commands/{command}/wait", R::command_wait, S::command_wait},
    {V::get, "/v1/sandboxes/{id}/commands/{command}/attach", R::command_attach, S::attach},
};

// Whether `segments` is `path`; its {id} and {command} segments, where it
// has them, in `id` and `command`.
bool path_matches(std::string_view path, const std::vector<std::string>& segments, std::string& id,
                  std::string& command) {
  std::size_t i = 0;
  path.remove_prefix(1);  // the leading '/'
  for (;;) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    if (i == segments.size()) return false;
    if (part == "{id}") id = segments[i];
    else if (part == "{command}") command = segments[i];
    else if (segments[i] != part) return false;
    ++i;
    if (slash == std::string_view::npos) return i == segments.size();
    path.remove_prefix(slash + 1);
  }
}

}  // namespace

std::span<const Route> route_table() { return kRoutes; }

std::optional<Target> parse_target(std::string_view target) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return std::nullopt;
  Target t;
  for (auto s : url->segments()) t.segments.push_back(std::string(s));
  for (auto p : url->params()) t.params[std::string(p.key)] = std::string(p.value);
  return t;
}

RouteMatch match_route(boost::beast::http::verb method, std::string_view target) {
  RouteMatch m;
  auto parsed = parse_target(target);
  if (!parsed) {
    m.kind = RouteMatch::Kind::malformed;
    return m;
  }
  m.target = std::move(*parsed);
  for (const Route& r : kRoutes) {
    std::string id, command;
    if (!path_matches(r.path, m.target.segments, id, command)) continue;
    m.id = std::move(id);
    m.command = std::move(command);
    if (r.method == method) {
      m.kind = RouteMatch::Kind::route;
      m.route = &r;
      return m;
    }
    m.kind = RouteMatch::Kind::wrong_method;
  }
  return m;
}

}  // namespace mayura::service
