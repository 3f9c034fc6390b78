#include "check.hpp"

#include <algorithm>
#include <thread>

#include "mayura/random_id.hpp"

namespace mayura::testing::conformance {

void fail(const std::string& text) { throw Failed(text); }
void not_applicable(const std::string& why) { throw NotApplicable(why); }
void check(bool ok, const std::string& text) {
  if (!ok) fail(text);
}

namespace {

constexpr std::size_t kShownBytes = 200;

}  // namespace

std::string show(std::string_view text) {
  static const char* hex = "0123456789abcdef";
  const std::string_view shown = text.substr(0, kShownBytes);
  std::string out = "\"";
  for (const char c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        // Bytes outside printable ASCII as \xNN: a verdict must show exactly
        // which bytes arrived, and stay one readable line.
        if (byte < 0x20 || byte >= 0x7f) {
          out += "\\x";
          out += hex[byte >> 4];
          out += hex[byte & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  if (text.size() > shown.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string show(bool value) { return value ? "true" : "false"; }
std::string show(Reason reason) { return std::string(reason_name(reason)); }

std::string show(FileType type) {
  switch (type) {
    case FileType::file: return "file";
    case FileType::directory: return "directory";
    case FileType::symlink: return "symlink";
    case FileType::other: return "other";
  }
  return "?";
}

std::string show(const std::vector<std::string>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + show(list[i]);
  return out + "]";
}

std::string differ(std::string_view actual, std::string_view expected) {
  if (actual.size() <= kShownBytes && expected.size() <= kShownBytes) {
    return "expected " + show(expected) + ", got " + show(actual);
  }
  const auto [a, e] = std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end());
  const auto at = static_cast<std::size_t>(a - actual.begin());
  const std::size_t from = at > 20 ? at - 20 : 0;
  return "expected " + std::to_string(expected.size()) + " bytes, got " + std::to_string(actual.size()) +
         "; they first differ at byte " + std::to_string(at) + " (bytes from " + std::to_string(from) + ": expected " +
         show(expected.substr(std::min(from, expected.size()), 60)) + ", got " +
         show(actual.substr(std::min(from, actual.size()), 60)) + ")";
}

std::string quote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string unique_token() {
  // The kernel's random bytes (mayura/random_id.hpp), as the engine's own
  // ids: tokens of one run, and of runs at once, never meet.
  return random_hex(12);
}

std::string sh(const Sandbox& sandbox, const std::string& script, const ExecOptions& options) {
  const ExecResult r = sandbox.exec({"/bin/sh", "-c", script}, options);
  if (r.exit_code != 0) {
    fail("sh -c " + show(script) + " exited " + show(r.exit_code) + (r.timed_out ? " (timed out)" : "") + ", stderr " +
         show(r.stderr));
  }
  return r.stdout;
}

std::string wait_for_file(std::string_view file) {
  // A fraction of a second where sleep takes one (GNU, BusyBox), else one.
  return "until [ -e " + std::string(file) + " ]; do sleep 0.05 2>/dev/null || sleep 1; done";
}

std::int64_t ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

Scratch::Scratch(const Sandbox& sandbox, std::string_view test)
    : sandbox_(sandbox), relative_("conformance-" + std::string(test) + "-" + unique_token()) {
  // Made by a command, not by write_file: whether write_file makes parents
  // is one of the things a test checks.
  sh(sandbox_, "mkdir " + quote(relative_));
}

Scratch::~Scratch() {
  try {
    sandbox_.remove(relative_);
  } catch (...) {
    // The test's verdict matters, not the clean-up's (a released sandbox,
    // or the very remove a test found broken).
  }
}

std::string Scratch::absolute() const {
  std::string root = sandbox_.workdir();
  if (root.empty() || root.back() != '/') root += '/';
  return root + relative_;
}

namespace {

// tagged LINE: "pid command line" for every process but this shell whose
// environment has LINE.
constexpr std::string_view kTaggedFunction = R"sh(tagged() {
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] && continue
    if tr '\000' '\n' < "$p/environ" 2>/dev/null | grep -qx "$1"; then
      printf '%s %s\n' "$pid" "$(tr '\000' ' ' < "$p/cmdline" 2>/dev/null)"
    fi
  done
}
)sh";

std::string tag_line(const std::string& tag) { return std::string(kTagVariable) + "=" + tag; }

}  // namespace

std::string processes_tagged(const Sandbox& sandbox, const std::string& tag, std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    const ExecResult r =
        sandbox.exec({"/bin/sh", "-c", std::string(kTaggedFunction) + "tagged \"$1\"", "sh", tag_line(tag)});
    check_eq(r.exit_code, 0, "listing the sandbox's processes (stderr " + show(r.stderr) + ")");
    if (r.stdout.empty() || std::chrono::steady_clock::now() >= deadline) return r.stdout;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void check_tag_listing_works(const Sandbox& sandbox) {
  const std::string line = tag_line("control-" + unique_token());
  // A tagged sleep of the listing shell's own; the listing is retried a few
  // times in case the sleep has not yet exec'd (and so has no tag yet).
  const std::string script =
      std::string(kTaggedFunction) +
      "env \"$1\" sleep 60 & pid=$!\n"
      "n=0\n"
      "while :; do\n"
      "  out=$(tagged \"$1\")\n"
      "  case \"$out\" in \"$pid \"*|*\"\n$pid \"*) break;; esac\n"
      "  n=$((n+1)); [ $n -ge 5 ] && break; sleep 1\n"
      "done\n"
      "kill $pid\n"
      "case \"$out\" in \"$pid \"*|*\"\n$pid \"*) echo seen;; *) echo \"not seen: $out\";; esac\n";
  const ExecResult r = sandbox.exec({"/bin/sh", "-c", script, "sh", line});
  check(r.exit_code == 0 && r.stdout == "seen\n",
        "the suite finds a command's processes by a variable in their environment, through /proc: it did not see a "
        "tagged sleep it had just started (exit " +
            show(r.exit_code) + ", stdout " + show(r.stdout) + ", stderr " + show(r.stderr) + ")");
}

std::vector<std::string> names_of(const std::vector<FileEntry>& entries) {
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

ConformanceTest make_test(std::string name, std::function<void(const Sandbox&)> body, bool ends_sandbox) {
  return make_context_test(
      std::move(name), [body = std::move(body)](const ConformanceContext& context) { body(context.sandbox); },
      ends_sandbox);
}

ConformanceTest make_context_test(std::string name, std::function<void(const ConformanceContext&)> body,
                                  bool ends_sandbox) {
  ConformanceTest test;
  test.name = std::move(name);
  test.ends_sandbox = ends_sandbox;
  test.run = [body = std::move(body)](const ConformanceContext& context) -> std::string {
    try {
      body(context);
      return std::string(kConformancePassed);
    } catch (const Failed& f) {
      return f.what();
    } catch (const NotApplicable& n) {
      return std::string(kConformanceNotApplicable) + n.what();
    } catch (const SandboxError& e) {
      return "unexpected SandboxError " + std::string(reason_name(e.reason())) + ": " + e.what();
    } catch (const std::exception& e) {
      return std::string("unexpected exception: ") + e.what();
    } catch (...) {
      return "unexpected exception of an unknown type";
    }
  };
  return test;
}

}  // namespace mayura::testing::conformance
