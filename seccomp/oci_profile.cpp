// OCI runtime-spec and Docker seccomp profiles (JSON), as runc and Docker
// read them, for commands that hold no capabilities.

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "filter.hpp"

namespace mayura::seccomp {
namespace {

using nlohmann::json;

// Bounds on the work one profile may cause. Docker's default is ~20 KiB,
// ~60 entries, ~400 names.
constexpr std::size_t kMaxBytes = 4 << 20;
constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxEntries = 4096;
constexpr std::size_t kMaxRules = 4096;  // the kernel runs at most 4096 instructions anyway
// Each rule costs libseccomp about one block plus some per condition. Bounded
// well below what libseccomp before 2.6.1 can count (its instruction count
// wraps at 65536, corrupting the heap or exporting a slice of the filter),
// and below what takes it long to compile.
constexpr std::size_t kMaxCost = 8192;
constexpr std::size_t kMaxArgs = 16;
constexpr std::uint64_t kMaxErrno = 4095;  // the kernel caps a filter's errno here

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw ProfileError("seccomp profile: " + where + ": " + what);
}

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const std::string& string_at(const json& v, const std::string& where) {
  if (!v.is_string()) fail(where, std::string("expected a string, got ") + v.type_name());
  return v.get_ref<const std::string&>();
}

std::uint64_t uint_at(const json& v, const std::string& where) {
  if (!v.is_number_unsigned()) fail(where, std::string("expected a non-negative integer, got ") + v.dump());
  return v.get<std::uint64_t>();
}

const json& array_at(const json& v, const std::string& where) {
  if (!v.is_array()) fail(where, std::string("expected an array, got ") + v.type_name());
  return v;
}

std::vector<std::string> strings_at(const json& v, const std::string& where) {
  std::vector<std::string> out;
  const json& a = array_at(v, where);
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back(string_at(a[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

std::optional<std::uint64_t> errno_ret(const json& object, const char* key, const std::string& where) {
  const json* v = member(object, key);
  if (!v) return std::nullopt;
  std::uint64_t e = uint_at(*v, where + "." + key);
  if (e > kMaxErrno) fail(where + "." + key, std::to_string(e) + " is above the largest errno, 4095");
  return e;
}

// runc's mapping: ERRNO and TRACE carry errnoRet (EPERM when absent).
std::uint32_t action_of(const std::string& name, std::optional<std::uint64_t> ret, const std::string& where) {
  const auto data = static_cast<std::uint32_t>(ret.value_or(EPERM));
  if (name == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
  if (name == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(data);
  if (name == "SCMP_ACT_KILL" || name == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
  if (name == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
  if (name == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (name == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(data);
  if (name == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
  if (name == "SCMP_ACT_NOTIFY") fail(where, "SCMP_ACT_NOTIFY is not supported (no listener)");
  fail(where, "unknown action \"" + name + "\"");
}

scmp_compare op_of(const std::string& name, const std::string& where) {
  static const std::pair<const char*, scmp_compare> kOps[] = {{"SCMP_CMP_NE", SCMP_CMP_NE},
                                                              {"SCMP_CMP_LT", SCMP_CMP_LT},
                                                              {"SCMP_CMP_LE", SCMP_CMP_LE},
                                                              {"SCMP_CMP_EQ", SCMP_CMP_EQ},
                                                              {"SCMP_CMP_GE", SCMP_CMP_GE},
                                                              {"SCMP_CMP_GT", SCMP_CMP_GT},
                                                              {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
  for (const auto& [n, op] : kOps)
    if (name == n) return op;
  fail(where, "unknown operator \"" + name + "\"");
}

// This machine as profiles name it.
struct Native {
  std::uint32_t arch;
  std::string go_name;                     // Docker's includes.arches: "amd64", "arm64"
  std::vector<std::uint32_t> compatible;   // arches this kernel can also run
  int kernel_major = 0, kernel_minor = 0;  // for includes.minKernel
};

Native native() {
  Native n{seccomp_arch_native(), "", {}};
  n.compatible.push_back(n.arch);
  if (n.arch == SCMP_ARCH_X86_64) {
    n.go_name = "amd64";
    n.compatible.insert(n.compatible.end(), {SCMP_ARCH_X86, SCMP_ARCH_X32});
  } else if (n.arch == SCMP_ARCH_AARCH64) {
    n.go_name = "arm64";
    n.compatible.push_back(SCMP_ARCH_ARM);
  }
  utsname u{};
  if (::uname(&u) == 0) {
    // "6.1.0-57-amd64": what does not parse stays 0 (an old kernel: every
    // syscall gated on a version counts as absent)
    char* end = nullptr;
    n.kernel_major = static_cast<int>(std::strtol(u.release, &end, 10));
    if (end && *end == '.') n.kernel_minor = static_cast<int>(std::strtol(end + 1, nullptr, 10));
  }
  return n;
}

// "SCMP_ARCH_X86_64" -> the libseccomp token if it is this machine's or one
// it runs; foreign or unknown-to-libseccomp arches give nullopt (ignored).
std::optional<std::uint32_t> arch_of(const std::string& name, const Native& n, const std::string& where) {
  static constexpr std::string_view kPrefix = "SCMP_ARCH_";
  if (name.rfind(kPrefix, 0) != 0) fail(where, "\"" + name + "\" is not an SCMP_ARCH_ name");
  std::string lower = name.substr(kPrefix.size());
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::uint32_t token = seccomp_arch_resolve_name(lower.c_str());
  if (token == 0) return std::nullopt;
  if (std::find(n.compatible.begin(), n.compatible.end(), token) == n.compatible.end()) return std::nullopt;
  return token;
}

// Docker's includes/excludes, for a command without capabilities.
bool applies(const json& entry, const Native& n, const std::string& where) {
  auto check = [&](const char* key, bool include) {
    const json* filter = member(entry, key);
    if (!filter) return true;
    std::string w = where + "." + key;
    if (!filter->is_object()) fail(w, std::string("expected an object, got ") + filter->type_name());
    if (const json* caps = member(*filter, "caps")) {
      // Needs a capability we never hold: skip. Excluded when a capability
      // is held: we hold none, so it applies.
      if (include && !strings_at(*caps, w + ".caps").empty()) return false;
      if (!include) strings_at(*caps, w + ".caps");
    }
    if (const json* arches = member(*filter, "arches")) {
      auto list = strings_at(*arches, w + ".arches");
      if (!list.empty()) {
        bool listed = std::find(list.begin(), list.end(), n.go_name) != list.end();
        if (listed != include) return false;
      }
    }
    if (const json* min_kernel = member(*filter, "minKernel")) {
      const std::string& text = string_at(*min_kernel, w + ".minKernel");
      int major = 0, minor = 0;
      const char* end = text.data() + text.size();
      std::from_chars_result r = std::from_chars(text.data(), end, major);
      if (r.ec == std::errc() && r.ptr != end && *r.ptr == '.') r = std::from_chars(r.ptr + 1, end, minor);
      if (r.ec != std::errc() || r.ptr != end || text.empty() || major < 0 || minor < 0)
        fail(w + ".minKernel", "\"" + text + "\" is not a kernel version like \"4.8\"");
      bool new_enough = std::pair(n.kernel_major, n.kernel_minor) >= std::pair(major, minor);
      if (new_enough != include) return false;
    }
    return true;
  };
  return check("includes", true) && check("excludes", false);
}

struct Compiler {
  const Native& n;
  detail::Filter& filter;
  std::uint32_t default_action;
  bool foreign_arches = false;  // sub-arches added: pseudo syscall numbers may apply
  std::size_t rules = 0;
  std::size_t cost = 0;

  void add(int nr, std::uint32_t action, const std::vector<scmp_arg_cmp>& args, const std::string& name,
           const std::string& where) {
    if (++rules > kMaxRules) fail(where, "more than " + std::to_string(kMaxRules) + " rules");
    cost += 1 + 4 * args.size();
    if (cost > kMaxCost)
      fail(where, "the profile is too large (more than " + std::to_string(kMaxCost) + " rule blocks)");
    int rc = seccomp_rule_add_array(filter.get(), action, nr, static_cast<unsigned>(args.size()), args.data());
    if (rc == -EEXIST) return;  // the same rule again
    if (rc < 0) fail(where, "libseccomp refused the rule for \"" + name + "\": " + std::strerror(-rc));
  }

  void entry(const json& e, const std::string& where) {
    if (!e.is_object()) fail(where, std::string("expected an object, got ") + e.type_name());
    std::vector<std::string> names;
    if (const json* v = member(e, "names")) names = strings_at(*v, where + ".names");
    if (const json* v = member(e, "name")) names.push_back(string_at(*v, where + ".name"));
    const json* act = member(e, "action");
    if (!act) fail(where, "missing \"action\"");
    std::uint32_t action =
        action_of(string_at(*act, where + ".action"), errno_ret(e, "errnoRet", where), where + ".action");

    std::vector<scmp_arg_cmp> args;
    if (const json* v = member(e, "args")) {
      const json& a = array_at(*v, where + ".args");
      if (a.size() > kMaxArgs) fail(where + ".args", "more than " + std::to_string(kMaxArgs) + " conditions");
      for (std::size_t i = 0; i < a.size(); ++i) {
        std::string w = where + ".args[" + std::to_string(i) + "]";
        if (!a[i].is_object()) fail(w, std::string("expected an object, got ") + a[i].type_name());
        const json* index = member(a[i], "index");
        const json* value = member(a[i], "value");
        const json* op = member(a[i], "op");
        if (!index) fail(w, "missing \"index\"");
        if (!op) fail(w, "missing \"op\"");
        std::uint64_t idx = uint_at(*index, w + ".index");
        if (idx > 5) fail(w + ".index", std::to_string(idx) + " is out of range (a syscall has arguments 0 to 5)");
        const json* two = member(a[i], "valueTwo");
        args.push_back(scmp_arg_cmp{static_cast<unsigned>(idx), op_of(string_at(*op, w + ".op"), w + ".op"),
                                    value ? uint_at(*value, w + ".value") : 0,
                                    two ? uint_at(*two, w + ".valueTwo") : 0});
      }
    }
    if (!applies(e, n, where)) return;
    if (action == default_action) return;  // libseccomp refuses these, and they change nothing

    // libseccomp takes one condition per argument in a rule; like runc, a
    // profile that tests an argument twice gets one rule per condition.
    std::set<unsigned> seen;
    bool repeated = false;
    for (const scmp_arg_cmp& c : args) repeated |= !seen.insert(c.arg).second;

    for (const std::string& name : names) {
      int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) continue;      // unknown to libseccomp: skipped
      if (nr < 0 && !foreign_arches) continue;  // not on this arch
      if (!repeated) {
        add(nr, action, args, name, where);
      } else {
        for (const scmp_arg_cmp& c : args) add(nr, action, {c}, name, where);
      }
    }
  }
};

}  // namespace

Program compile_oci(std::string_view text) {
  if (text.size() > kMaxBytes) fail("input", "larger than " + std::to_string(kMaxBytes) + " bytes");
  json doc;
  try {
    doc = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) fail("input", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
      return true;
    });
  } catch (const json::exception& e) {
    throw ProfileError(std::string("seccomp profile: invalid JSON: ") + e.what());
  }
  try {
    if (!doc.is_object()) fail("profile", std::string("expected an object, got ") + doc.type_name());
    const json* def = member(doc, "defaultAction");
    if (!def) fail("profile", "missing \"defaultAction\"");
    std::uint32_t default_action =
        action_of(string_at(*def, "defaultAction"), errno_ret(doc, "defaultErrnoRet", "profile"), "defaultAction");

    const Native n = native();
    detail::Filter filter(default_action);
    // Other arches' syscalls: the default action, unless that lets them all
    // through, in which case EPERM (a denylist must not be bypassed by
    // int $0x80).
    std::uint32_t bad_arch = default_action;
    if (bad_arch == SCMP_ACT_ALLOW || bad_arch == SCMP_ACT_LOG) bad_arch = SCMP_ACT_ERRNO(EPERM);
    filter.set_attr(SCMP_FLTATR_ACT_BADARCH, bad_arch, "the bad-arch action");

    Compiler c{n, filter, default_action};
    auto add_arch = [&](const std::string& name, const std::string& where) {
      auto token = arch_of(name, n, where);
      if (!token || *token == n.arch) return;
      int rc = seccomp_arch_add(filter.get(), *token);
      if (rc < 0 && rc != -EEXIST) fail(where, "libseccomp refused \"" + name + "\": " + std::strerror(-rc));
      c.foreign_arches = true;
    };
    if (const json* v = member(doc, "architectures")) {
      auto names = strings_at(*v, "architectures");
      for (std::size_t i = 0; i < names.size(); ++i) add_arch(names[i], "architectures[" + std::to_string(i) + "]");
    }
    if (const json* v = member(doc, "archMap")) {
      const json& map = array_at(*v, "archMap");
      for (std::size_t i = 0; i < map.size(); ++i) {
        std::string w = "archMap[" + std::to_string(i) + "]";
        if (!map[i].is_object()) fail(w, std::string("expected an object, got ") + map[i].type_name());
        const json* arch = member(map[i], "architecture");
        if (!arch) fail(w, "missing \"architecture\"");
        auto token = arch_of(string_at(*arch, w + ".architecture"), n, w + ".architecture");
        std::vector<std::string> subs;
        if (const json* s = member(map[i], "subArchitectures")) subs = strings_at(*s, w + ".subArchitectures");
        if (!token || *token != n.arch) continue;  // another machine's entry
        for (std::size_t j = 0; j < subs.size(); ++j)
          add_arch(subs[j], w + ".subArchitectures[" + std::to_string(j) + "]");
      }
    }

    if (const json* v = member(doc, "syscalls")) {
      const json& entries = array_at(*v, "syscalls");
      if (entries.size() > kMaxEntries) fail("syscalls", "more than " + std::to_string(kMaxEntries) + " entries");
      for (std::size_t i = 0; i < entries.size(); ++i) c.entry(entries[i], "syscalls[" + std::to_string(i) + "]");
    }
    return filter.export_bpf();
  } catch (const json::exception& e) {
    throw ProfileError(std::string("seccomp profile: ") + e.what());
  }
}

}  // namespace mayura::seccomp
