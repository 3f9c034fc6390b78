// The reasons a caller tells failures apart by: NOT_FOUND, LIMIT_REACHED,
// INVALID_INPUT (with nothing done), CANCELLED before anything starts.

#include <algorithm>
#include <stop_token>

#include "areas.hpp"
#include "check.hpp"

namespace mayura::testing::conformance {
namespace {

void not_found(const Sandbox& s) {
  Scratch dir(s, "not-found");
  check_fails(Reason::NOT_FOUND, "read_file of a missing file", [&] { s.read_file(dir.path("missing")); });
  check_fails(Reason::NOT_FOUND, "read_file of a missing file by its absolute path",
              [&] { s.read_file(dir.absolute("missing")); });
  check_fails(Reason::NOT_FOUND, "read_file in a missing directory", [&] { s.read_file(dir.path("no-dir/file")); });
  check_fails(Reason::NOT_FOUND, "list of a missing directory", [&] { s.list(dir.path("no-dir")); });
  check_fails(Reason::NOT_FOUND, "remove of a missing path", [&] { s.remove(dir.path("missing")); });
}

void read_limit(const Sandbox& s) {
  Scratch dir(s, "read-limit");
  s.write_file(dir.path("eleven"), "0123456789A");
  ReadOptions o;
  o.max_bytes = 10;
  check_fails(Reason::LIMIT_REACHED, "read_file of 11 bytes with max_bytes 10",
              [&] { s.read_file(dir.path("eleven"), o); });
  o.max_bytes = 11;
  check_eq(s.read_file(dir.path("eleven"), o), "0123456789A", "read_file of 11 bytes with max_bytes 11");
  o.max_bytes = 0;
  check_fails(Reason::LIMIT_REACHED, "read_file of 11 bytes with max_bytes 0",
              [&] { s.read_file(dir.path("eleven"), o); });
  s.write_file(dir.path("empty"), "");
  check_eq(s.read_file(dir.path("empty"), o), "", "read_file of an empty file with max_bytes 0");
}

void invalid_input(const Sandbox& s) {
  Scratch dir(s, "invalid");
  const std::string nul = dir.path(std::string("made\0more", 9));
  check_fails(Reason::INVALID_INPUT, "read_file of a path with a NUL byte", [&] { s.read_file(nul); });
  check_fails(Reason::INVALID_INPUT, "write_file to a path with a NUL byte", [&] { s.write_file(nul, "x"); });
  check_fails(Reason::INVALID_INPUT, "list of a path with a NUL byte", [&] { s.list(nul); });
  check_fails(Reason::INVALID_INPUT, "remove of a path with a NUL byte", [&] { s.remove(nul); });
  check_fails(Reason::INVALID_INPUT, "read_file of an empty path", [&] { s.read_file(""); });
  check_fails(Reason::INVALID_INPUT, "write_file to an empty path", [&] { s.write_file("", "x"); });
  check_fails(Reason::INVALID_INPUT, "list of an empty path", [&] { s.list(""); });
  check_fails(Reason::INVALID_INPUT, "remove of an empty path", [&] { s.remove(""); });

  // each command would leave a file if it ran
  int n = 0;
  auto marker = [&] { return dir.absolute("ran-" + std::to_string(n++)); };
  auto refused = [&](const std::string& what, std::vector<std::string> argv, const ExecOptions& o = {}) {
    check_fails(Reason::INVALID_INPUT, what, [&] { s.exec(argv, o); });
  };
  refused("exec of an empty argv", {});
  refused("exec of an empty command name", {"", marker()});
  refused("exec with a NUL byte in the command name", {std::string("tou\0ch", 6), marker()});
  refused("exec with a NUL byte in an argument", {"touch", marker(), std::string("a\0b", 3)});
  ExecOptions o;
  o.cwd = dir.path(std::string("a\0b", 3));
  refused("exec with a NUL byte in cwd", {"touch", marker()}, o);
  for (const std::string name : {"", "1LEADING_DIGIT", "HAS-DASH", "HAS=EQUALS", "HAS SPACE"}) {
    o = {};
    o.env = {{name, "x"}};
    refused("exec with the env variable name " + show(name), {"touch", marker()}, o);
  }
  o = {};
  o.env = {{"VALUE_WITH_NUL", std::string("a\0b", 3)}};
  refused("exec with a NUL byte in an env value", {"touch", marker()}, o);
  for (const std::int64_t timeout : {0, -1}) {
    o = {};
    o.timeout_ms = timeout;
    refused("exec with timeout_ms " + show(timeout), {"touch", marker()}, o);
  }

  // and nothing was done: no command ran, no file was written
  check_eq(names_of(s.list(dir.relative())), std::vector<std::string>{},
           "what the refused calls left in their directory");
  const auto top = names_of(s.list());
  check(std::find(top.begin(), top.end(), dir.relative()) != top.end(),
        "the test's directory is gone from the workdir after refused calls (remove of an empty path?)");
}

void cancelled_before_start(const Sandbox& s) {
  Scratch dir(s, "cancelled");
  s.write_file(dir.path("f"), "kept");
  std::stop_source stop;
  stop.request_stop();
  ExecOptions e;
  e.cancellation = stop.get_token();
  FileOptions f;
  f.cancellation = stop.get_token();
  ReadOptions r;
  r.cancellation = stop.get_token();
  check_fails(Reason::CANCELLED, "exec with a stop already requested", [&] {
    s.exec({"touch", dir.absolute("ran")}, e);
  });
  check_fails(Reason::CANCELLED, "write_file of a new file with a stop already requested",
              [&] { s.write_file(dir.path("new"), "x", f); });
  check_fails(Reason::CANCELLED, "write_file over a file with a stop already requested",
              [&] { s.write_file(dir.path("f"), "changed", f); });
  check_fails(Reason::CANCELLED, "read_file with a stop already requested", [&] { s.read_file(dir.path("f"), r); });
  check_fails(Reason::CANCELLED, "list with a stop already requested", [&] { s.list(dir.relative(), f); });
  check_fails(Reason::CANCELLED, "remove with a stop already requested", [&] { s.remove(dir.path("f"), f); });
  check_eq(names_of(s.list(dir.relative())), std::vector<std::string>{"f"}, "what the cancelled calls left");
  check_eq(s.read_file(dir.path("f")), "kept", "a file a cancelled write_file was to replace");
}

}  // namespace

std::vector<ConformanceTest> error_tests() {
  return {
      make_test("errors_not_found", not_found),
      make_test("errors_read_limit", read_limit),
      make_test("errors_invalid_input_does_nothing", invalid_input),
      make_test("errors_cancelled_before_start", cancelled_before_start),
  };
}

}  // namespace mayura::testing::conformance
