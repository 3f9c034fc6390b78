// The HTTP API's route table (service/route_table.hpp): each route is found
// by its own method and path, a path of the table with another method is a
// wrong method (with its sandbox's id, so that an unknown one is 404 first),
// and what the table does not have is no route.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "service/route_table.hpp"

namespace mayura::service {
namespace {

using verb = boost::beast::http::verb;

// The path with `id` for its {id}, and c7 for a {command}.
std::string with_id(std::string_view path, const std::string& id) {
  std::string out(path);
  if (const auto at = out.find("{id}"); at != std::string::npos) out.replace(at, 4, id);
  if (const auto at = out.find("{command}"); at != std::string::npos) out.replace(at, 9, "c7");
  return out;
}

TEST(RouteTable, EachRouteIsFoundByItsMethodAndPath) {
  for (const Route& r : route_table()) {
    SCOPED_TRACE(std::string(r.path));
    const RouteMatch m = match_route(r.method, with_id(r.path, "sbx-1") + "?path=a%20b");
    ASSERT_EQ(m.kind, RouteMatch::Kind::route);
    EXPECT_EQ(m.route, &r);
    EXPECT_EQ(m.id, r.path.find("{id}") == std::string_view::npos ? "" : "sbx-1");
    EXPECT_EQ(m.command, r.path.find("{command}") == std::string_view::npos ? "" : "c7");
    EXPECT_EQ(m.target.params.at("path"), "a b");
  }
}

TEST(RouteTable, NoRouteIsListedTwice) {
  std::set<std::pair<verb, std::string_view>> seen;
  for (const Route& r : route_table()) {
    EXPECT_TRUE(seen.emplace(r.method, r.path).second) << r.path;
    EXPECT_EQ(r.path.front(), '/') << r.path;
    // Only a file's body may be larger than a JSON body.
    EXPECT_EQ(r.file_body, r.resource == Resource::write) << r.path;
  }
}

TEST(RouteTable, AKnownPathWithAnotherMethodIsAWrongMethod) {
  for (const Route& r : route_table()) {
    for (verb v : {verb::get, verb::post, verb::put, verb::delete_, verb::patch}) {
      bool listed = false;
      for (const Route& other : route_table()) listed = listed || (other.path == r.path && other.method == v);
      if (listed) continue;
      SCOPED_TRACE(std::string(r.path) + " " + std::string(boost::beast::http::to_string(v)));
      const RouteMatch m = match_route(v, with_id(r.path, "sbx-2"));
      EXPECT_EQ(m.kind, RouteMatch::Kind::wrong_method);
      EXPECT_EQ(m.route, nullptr);
      EXPECT_EQ(m.id, r.path.find("{id}") == std::string_view::npos ? "" : "sbx-2");
    }
  }
}

TEST(RouteTable, WhatTheTableLacksIsNoRoute) {
  for (const char* target : {"/", "/v1", "/v2/sandboxes", "/v1/sandboxes/x/desktop/zoom", "/v1/sandboxes/x/exec/more",
                             "/v1/sandboxes/x/y", "/metrics/x", "/V1/health"}) {
    EXPECT_EQ(match_route(verb::get, target).kind, RouteMatch::Kind::unknown_path) << target;
  }
  for (const char* target : {"", "v1/health", "http://host/v1/health", "/v1/%zz"}) {
    EXPECT_EQ(match_route(verb::get, target).kind, RouteMatch::Kind::malformed) << target;
  }
}

TEST(RouteTable, ServingFollowsTheResource) {
  for (const Route& r : route_table()) {
    const bool file = r.resource == Resource::read || r.resource == Resource::write || r.resource == Resource::remove ||
                      r.resource == Resource::list;
    EXPECT_EQ(r.serving == Serving::file_call, file) << r.path;
    EXPECT_EQ(r.serving == Serving::exec, r.resource == Resource::exec) << r.path;
    EXPECT_EQ(r.serving == Serving::run, r.resource == Resource::run) << r.path;
    EXPECT_EQ(r.serving == Serving::command_wait, r.resource == Resource::command_wait) << r.path;
    EXPECT_EQ(r.serving == Serving::attach, r.resource == Resource::command_attach) << r.path;
  }
}

}  // namespace
}  // namespace mayura::service
