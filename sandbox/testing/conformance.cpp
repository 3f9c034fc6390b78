#include "mayura/testing/conformance.hpp"

#include <algorithm>
#include <ostream>

#include "areas.hpp"

namespace mayura::testing {

const std::vector<ConformanceTest>& sandbox_conformance() {
  static const std::vector<ConformanceTest> suite = [] {
    std::vector<ConformanceTest> all;
    for (auto area : {conformance::exec_tests, conformance::stop_tests, conformance::file_tests,
                      conformance::error_tests, conformance::disk_tests, conformance::lifetime_tests}) {
      for (auto& test : area()) all.push_back(std::move(test));
    }
    // Those that end their sandbox last, so that a runner going down the
    // list on one sandbox reaches every other test first.
    std::stable_partition(all.begin(), all.end(), [](const ConformanceTest& t) { return !t.ends_sandbox; });
    return all;
  }();
  return suite;
}

bool conformance_not_applicable(std::string_view verdict) {
  return verdict.substr(0, kConformanceNotApplicable.size()) == kConformanceNotApplicable;
}

std::ostream& operator<<(std::ostream& out, const ConformanceTest& test) { return out << test.name; }

}  // namespace mayura::testing
