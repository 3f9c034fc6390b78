// Image names as users write them, and what the store keeps them as.

#include <gtest/gtest.h>

#include "mayura/rootfs/image_reference.hpp"

namespace mayura::rootfs {
namespace {

std::string normalized(const char* text) {
  const auto ref = parse_image_reference(text);
  return ref ? ref->str() : "<invalid>";
}

TEST(ImageReference, NamesGetATagAndLoseDockerHubsPrefixes) {
  EXPECT_EQ(normalized("alpine"), "alpine:latest");
  EXPECT_EQ(normalized("alpine:3.22"), "alpine:3.22");
  EXPECT_EQ(normalized("node:24-slim"), "node:24-slim");
  EXPECT_EQ(normalized("docker.io/library/node:24-slim"), "node:24-slim");
  EXPECT_EQ(normalized("index.docker.io/library/alpine"), "alpine:latest");
  EXPECT_EQ(normalized("library/alpine:1"), "alpine:1");
  EXPECT_EQ(normalized("docker.io/team/app:v1"), "team/app:v1");
  EXPECT_EQ(normalized("ghcr.io/team/app:v1.2_rc-1"), "ghcr.io/team/app:v1.2_rc-1");
  EXPECT_EQ(normalized("localhost:5000/app"), "localhost:5000/app:latest");
  EXPECT_EQ(normalized("registry.example:5000/a/b/c:t"), "registry.example:5000/a/b/c:t");
  EXPECT_EQ(normalized("x/a__b-c.d/e---f:_x"), "x/a__b-c.d/e---f:_x");
}

TEST(ImageReference, WhatIsNoNameIsRefusedWithAReason) {
  for (const char* bad : {"", "Alpine", "alpine:", "alpine:-x", "alpine@sha256:abc", "/abs", "a//b", "a/", "-a", "a_",
                          "a...b", "../x", "a:b:c", "a b",
                          "a:"  // NOLINT(bugprone-suspicious-missing-comma): one name, cut to fit the line
                          "01234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901"
                          "23456789012345678901234567890123456789"}) {
    std::string why;
    EXPECT_FALSE(parse_image_reference(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_FALSE(parse_image_reference(std::string(256, 'a')));
}

}  // namespace
}  // namespace mayura::rootfs
