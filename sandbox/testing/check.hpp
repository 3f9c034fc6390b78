#pragma once
// What the suite's tests are written with. A test is a function of the
// sandbox that returns when everything held; a check that does not hold
// throws Failed, whose text becomes the test's verdict.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mayura/errors.hpp"
#include "mayura/sandboxes.hpp"
#include "mayura/testing/conformance.hpp"

namespace mayura::testing::conformance {

class Failed : public std::exception {
 public:
  explicit Failed(std::string text) : text_(std::move(text)) {}
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string text_;
};

// Thrown by a test that found the provider does not claim what it is about.
class NotApplicable : public std::exception {
 public:
  explicit NotApplicable(std::string why) : why_(std::move(why)) {}
  const char* what() const noexcept override { return why_.c_str(); }

 private:
  std::string why_;
};

[[noreturn]] void fail(const std::string& text);
[[noreturn]] void not_applicable(const std::string& why);
void check(bool ok, const std::string& text);

// Values as a verdict shows them: text quoted with its control bytes
// escaped, long text cut.
std::string show(std::string_view text);
inline std::string show(const std::string& text) { return show(std::string_view(text)); }
inline std::string show(const char* text) { return show(std::string_view(text)); }
std::string show(bool value);
std::string show(Reason reason);
std::string show(FileType type);
std::string show(const std::vector<std::string>& list);
template <class T>
requires std::is_integral_v<T> &&(!std::is_same_v<T, bool>)std::string show(T value) { return std::to_string(value); }
template <class T>
std::string show(const std::optional<T>& value) {
  return value ? show(*value) : std::string("none");
}

// "expected X, got Y", and for long text where they first differ.
std::string differ(std::string_view actual, std::string_view expected);

template <class A, class B>
void check_eq(const A& actual, const B& expected, const std::string& what) {
  if (actual == expected) return;
  if constexpr (std::is_convertible_v<const A&, std::string_view> &&
                std::is_convertible_v<const B&, std::string_view>) {
    fail(what + ": " + differ(actual, expected));
  } else {
    fail(what + ": expected " + show(expected) + ", got " + show(actual));
  }
}

// What `fn` did: returned, or failed with a SandboxError of some reason.
// Anything else it throws goes on up.
template <class Fn>
std::optional<Reason> reason_of(Fn&& fn) {
  try {
    std::forward<Fn>(fn)();
  } catch (const SandboxError& e) {
    return e.reason();
  }
  return std::nullopt;
}

template <class Fn>
void check_fails(Reason expected, const std::string& what, Fn&& fn) {
  const std::optional<Reason> got = reason_of(std::forward<Fn>(fn));
  if (got == expected) return;
  fail(what + ": expected SandboxError " + show(expected) + ", " +
       (got ? "got " + show(*got) : std::string("but it succeeded")));
}

// Quoted for sh: any text, one word.
std::string quote(std::string_view text);

// A name no other test, or earlier run, uses.
std::string unique_token();

// Runs `sh -c script` and fails unless it exits 0; gives its stdout.
std::string sh(const Sandbox& sandbox, const std::string& script, const ExecOptions& options = {});

// How long the suite waits for something it knows must come (a command's
// end once it is to stop, the end of a release, processes leaving /proc)
// before it gives up. Only a provider that never does it reaches this: the
// suite asserts what happened, never how fast.
inline constexpr std::chrono::seconds kHangBound{60};

// A shell loop that returns once `file` (a plain name, no quoting needed;
// relative to the current directory) is there: a command that waits for the
// test, not for a clock. It has no single quote, so it fits in sh -c '...'.
std::string wait_for_file(std::string_view file);

// Milliseconds between two moments.
std::int64_t ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to);

// The directory a test works in, under the workdir, removed when the test
// ends (whatever became of it), so tests share a sandbox without meeting.
class Scratch {
 public:
  Scratch(const Sandbox& sandbox, std::string_view test);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  // Relative to the workdir: the directory itself, or a path inside it.
  const std::string& relative() const { return relative_; }
  std::string path(std::string_view inside) const { return relative_ + "/" + std::string(inside); }
  // The same, from the root.
  std::string absolute() const;
  std::string absolute(std::string_view inside) const { return absolute() + "/" + std::string(inside); }

 private:
  Sandbox sandbox_;
  std::string relative_;
};

// The variable a command's processes are tagged with (every process it starts
// inherits it), so that what is left of them can be found.
inline constexpr std::string_view kTagVariable = "MAYURA_CONFORMANCE_TAG";

// The processes of the sandbox whose environment holds the tag, one line
// each ("pid command line"); empty when there are none. Waits up to `grace`
// for them to go, since a killed process takes a moment to leave /proc.
std::string processes_tagged(const Sandbox& sandbox, const std::string& tag,
                             std::chrono::milliseconds grace = kHangBound);
// Fails unless the listing above sees a tagged process it knows is alive:
// a listing that sees nothing (no /proc, processes hidden) proves nothing.
void check_tag_listing_works(const Sandbox& sandbox);

// The names in a listing, in its order.
std::vector<std::string> names_of(const std::vector<FileEntry>& entries);

// A test of the suite from a body that returns when everything held.
ConformanceTest make_test(std::string name, std::function<void(const Sandbox&)> body, bool ends_sandbox = false);
// The same, for a body that needs the whole context (the runner's Sandboxes).
ConformanceTest make_context_test(std::string name, std::function<void(const ConformanceContext&)> body,
                                  bool ends_sandbox = false);

}  // namespace mayura::testing::conformance
