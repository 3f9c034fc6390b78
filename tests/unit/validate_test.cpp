#include <gtest/gtest.h>

#include "mayura/sandbox.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura {
namespace {

using testing::reason_of;

TEST(Validate, PathsRefuseEmptyNulAndOverlong) {
  EXPECT_NO_THROW(check_path("a/b.txt"));
  EXPECT_NO_THROW(check_path("/abs/olute"));
  EXPECT_EQ(reason_of([] { check_path(""); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_path(std::string("a\0b", 3)); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_path(std::string(5000, 'a')); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_path(std::string(300, 'a') + "/x"); }), Reason::INVALID_INPUT);
}

TEST(Validate, EnvNamesAndValues) {
  EXPECT_NO_THROW(check_env({{"NODE_ENV", "test"}, {"_x1", ""}}));
  EXPECT_EQ(reason_of([] { check_env({{"", "x"}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_env({{"A=B", "x"}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_env({{"1A", "x"}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_env({{"A", std::string("x\0y", 3)}}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_env({{"A", std::string(200 * 1024, 'x')}}); }), Reason::INVALID_INPUT);
}

TEST(Validate, Argv) {
  EXPECT_NO_THROW(check_argv({"ls", "-l"}));
  EXPECT_EQ(reason_of([] { check_argv({}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_argv({""}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_argv({"echo", std::string("a\0b", 3)}); }), Reason::INVALID_INPUT);
}

TEST(Validate, DomainPatterns) {
  for (const char* ok : {"registry.npmjs.org", "*.github.com", "Example.COM.", "api.example.com:8443", "a-b.c_d.io"}) {
    EXPECT_NO_THROW(check_domain_pattern(ok)) << ok;
  }
  for (const char* bad : {"", "*", "*.com", "*.", "exa mple.com", "-x.com", "x..com", "x.com:0", "x.com:99999",
                          "x.com:", "*.*.com", "http://x.com"}) {
    EXPECT_EQ(reason_of([bad] { check_domain_pattern(bad); }), Reason::INVALID_INPUT) << bad;
  }
}

TEST(Validate, PortsAndLabels) {
  EXPECT_NO_THROW(check_port(1));
  EXPECT_NO_THROW(check_port(65535));
  EXPECT_EQ(reason_of([] { check_port(0); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([] { check_port(70000); }), Reason::INVALID_INPUT);
  EXPECT_NO_THROW(check_labels({{"run", "abc"}}));
  EXPECT_EQ(reason_of([] { check_labels({{"", "x"}}); }), Reason::INVALID_INPUT);
}

TEST(Errors, HttpFailures) {
  EXPECT_EQ(sandbox_http_failure(400).reason(), Reason::INVALID_INPUT);
  EXPECT_EQ(sandbox_http_failure(403).reason(), Reason::PERMISSION_DENIED);
  EXPECT_EQ(sandbox_http_failure(404).reason(), Reason::GONE);
  EXPECT_EQ(sandbox_http_failure(429).reason(), Reason::LIMIT_REACHED);
  EXPECT_EQ(sandbox_http_failure(501).reason(), Reason::UNSUPPORTED);
  EXPECT_EQ(sandbox_http_failure(503).reason(), Reason::INTERNAL);
  EXPECT_STREQ(sandbox_http_failure(418).what(), "the provider answered HTTP 418");
}

TEST(Errors, ReasonNames) {
  EXPECT_EQ(reason_name(Reason::GONE), "GONE");
  EXPECT_EQ(reason_name(Reason::PERMISSION_DENIED), "PERMISSION_DENIED");
  SandboxError e(Reason::NOT_FOUND, "x");
  EXPECT_EQ(e.reason(), Reason::NOT_FOUND);
  EXPECT_STREQ(e.what(), "x");
}

}  // namespace
}  // namespace mayura
