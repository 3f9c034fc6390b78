// The README's conformance example (someone else's provider run through the
// suite with GoogleTest), built against the installed package so it cannot
// rot. The native provider stands in for "my provider".
#include <gtest/gtest.h>
#include <mayura/native.hpp>
#include <mayura/sandbox.hpp>
#include <mayura/testing/conformance.hpp>

std::shared_ptr<mayura::SandboxProvider> my_provider() { return mayura::native_sandboxes(); }

class MyProvider : public testing::TestWithParam<mayura::testing::ConformanceTest> {};

TEST_P(MyProvider, Conforms) {
  // The disk tests make four sandboxes of their own.
  auto sandboxes = mayura::create_sandboxes(my_provider(), {.max_sandboxes = 5});
  auto sandbox = sandboxes.create({.lifetime_ms = 10 * 60'000});  // one per test: some end theirs
  const std::string verdict = GetParam().run({sandbox, sandboxes});
  sandboxes.close();
  if (mayura::testing::conformance_not_applicable(verdict)) {
    // Passed by design: the provider does not claim the feature, and the
    // refusal the contract asks for held. Recorded (in the XML report), never skipped.
    RecordProperty("not_applicable", verdict);
    return;
  }
  EXPECT_EQ(verdict, "passed");
}

INSTANTIATE_TEST_SUITE_P(Contract, MyProvider, testing::ValuesIn(mayura::testing::sandbox_conformance()),
                         [](const auto& test) { return test.param.name; });
