// The scripts' texts. Each starts with its arguments as shell assignments
// and goes on with a fixed body, so no argument is ever read as code.

#include "mayura/sandbox_scripts.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

namespace mayura {
namespace sandbox_scripts {
namespace {

// dd reads whole blocks, seeking to its start; other chunks go through
// tail and head.
constexpr std::uint64_t kBlock = 65536;

// A shell compares numbers as intmax_t: a larger bound would not parse.
std::uint64_t as_shell_number(std::uint64_t n) {
  return std::min<std::uint64_t>(n, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
}

// The text that writes `length` bytes of "$p" from `offset` to standard output.
std::string chunk_of_p(std::uint64_t offset, std::uint64_t length) {
  if (offset % kBlock == 0 && length % kBlock == 0) {
    return "dd if=\"$p\" bs=" + std::to_string(kBlock) + " skip=" + std::to_string(offset / kBlock) +
           " count=" + std::to_string(length / kBlock) + " 2>/dev/null";
  }
  return "tail -c +" + std::to_string(offset + 1) + " \"$p\" 2>/dev/null | head -c " + std::to_string(length);
}

bool valid_tag(std::string_view tag) {
  return !tag.empty() && tag.size() <= 128 && std::all_of(tag.begin(), tag.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// The directory a (path_word'ed) path is in, as a path too.
std::string parent_of(std::string_view path) {
  const std::string word = path.empty() || path.front() == '/' ? std::string(path) : "./" + std::string(path);
  const auto slash = word.rfind('/');
  return slash == 0 ? "/" : word.substr(0, slash);
}

}  // namespace

SandboxError failure(int exit_code, std::string_view what) {
  const std::string w(what);
  switch (exit_code) {
    case kNotFound: return SandboxError(Reason::NOT_FOUND, w + ": no such file or directory");
    case kInvalid: return SandboxError(Reason::INVALID_INPUT, w + ": a directory, or not the kind of file this needs");
    case kDenied: return SandboxError(Reason::PERMISSION_DENIED, w + ": permission denied");
    case kTooLarge: return SandboxError(Reason::LIMIT_REACHED, w + ": larger than the limit, or no space left");
    case kNotStopped: return SandboxError(Reason::INTERNAL, w + ": its processes could not be stopped");
    default:
      return SandboxError(Reason::INTERNAL,
                          w + ": the sandbox's script failed (exit code " + std::to_string(exit_code) + ")");
  }
}

std::string quote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string path_word(std::string_view path) {
  if (path.empty()) return "'.'";
  if (path.front() == '/') return quote(path);
  return quote("./" + std::string(path));
}

std::string read_file(std::string_view path, std::uint64_t offset, std::uint64_t length, std::uint64_t max_bytes) {
  std::string s = "p=" + path_word(path) + "\n";
  s += R"(if [ ! -e "$p" ]; then exit 3; fi
if [ ! -f "$p" ]; then exit 4; fi
if [ ! -r "$p" ]; then exit 5; fi
s=$(stat -L -c %s "$p") || exit 9
)";
  s += "if [ \"$s\" -gt " + std::to_string(as_shell_number(max_bytes)) + " ]; then exit 6; fi\n";
  s += "echo \"$s\"\n";
  if (length > 0) s += chunk_of_p(offset, length) + " | base64 || exit 9\n";
  return s;
}

std::string list(std::string_view path) {
  // The globs take every name but . and ..; a pattern that matched nothing
  // stays as it is, first in what it gave, and is dropped for not existing.
  // Each glob is put before the names already taken, so that this is one
  // pass (a loop that rebuilt the list name by name took bash 40 s for
  // 3,000 names). One stat for all the entries; if one went away
  // meanwhile, one stat each for those still there. The names go as hex
  // bytes through od, and awk puts each beside its stat line.
  return "p=" + path_word(path) + "\n" + R"(if [ ! -e "$p" ]; then exit 3; fi
if [ ! -d "$p" ]; then exit 4; fi
cd "$p" 2>/dev/null && [ -r . ] || exit 5
set -- ..?*
[ -e "$1" ] || [ -L "$1" ] || shift
set -- .[!.]* "$@"
[ -e "$1" ] || [ -L "$1" ] || shift
set -- * "$@"
[ -e "$1" ] || [ -L "$1" ] || shift
if [ $# -gt 0 ] && ! s=$(stat -c '%f %s %.3Y' -- "$@" 2>/dev/null); then
  s=
  for f do
    shift
    if l=$(stat -c '%f %s %.3Y' -- "$f" 2>/dev/null); then
      set -- "$@" "$f"
      s="${s:+$s
}$l"
    elif [ -e "$f" ] || [ -L "$f" ]; then
      exit 9
    fi
  done
fi
echo $#
if [ $# -gt 0 ]; then
  { printf '%s\n' "$s"; printf '%s\0' "$@" | od -A n -t x1 -v; } |
    awk -v n=$# 'NR <= n { st[NR] = $0; next }
      { for (i = 1; i <= NF; i++) if ($i == "00") { print st[++k] " " name; name = "" } else name = name $i }' || exit 9
fi
)";
}

std::string remove(std::string_view path) {
  return "p=" + path_word(path) + "\n" + R"(case $p in */ | */. | */..) exit 4 ;; esac
if [ ! -e "$p" ] && [ ! -L "$p" ]; then exit 3; fi
rm -rf "$p" 2>/dev/null
if [ -e "$p" ] || [ -L "$p" ]; then exit 5; fi
)";
}

std::string prepare_write(std::string_view path) {
  // When mkdir fails, a file among the parents is the caller's mistake;
  // anything else is a permission.
  return "p=" + path_word(path) + " q=" + quote(parent_of(path)) + "\n" + R"(if [ -d "$p" ]; then exit 4; fi
if [ -e "$p" ] && [ ! -f "$p" ]; then exit 4; fi
if ! mkdir -p "$q" 2>/dev/null; then
  while :; do
    if [ -e "$q" ] && [ ! -d "$q" ]; then exit 4; fi
    r=${q%/*}
    if [ -z "$r" ] || [ "$r" = "$q" ]; then break; fi
    q=$r
  done
  exit 5
fi
if [ ! -w "$q" ]; then exit 5; fi
)";
}

std::string write_chunk(std::string_view path, WriteMode mode, std::optional<std::string_view> base64) {
  std::string s = "p=" + path_word(path) + "\n";
  const std::string into = mode == WriteMode::append ? " >> \"$p\"" : " > \"$p\"";
  const std::string decode = base64 ? "printf %s " + quote(*base64) + " | base64 -d" + into : "base64 -d" + into;
  s += "if ! " + decode + R"(; then
  if [ -d "$p" ]; then exit 4; fi
  if [ -e "$p" ] && [ ! -w "$p" ]; then exit 5; fi
  if [ ! -e "$p" ] && [ ! -w "${p%/*}/" ]; then exit 5; fi
  exit 6
fi
)";
  return s;
}

std::string replace_file(std::string_view temp, std::string_view path) {
  return "t=" + path_word(temp) + " p=" + path_word(path) + "\n" + R"(if [ -d "$p" ]; then rm -f "$t"; exit 4; fi
m=644
if [ -f "$p" ]; then m=$(stat -L -c %a "$p") || m=644; fi
if ! chmod "$m" "$t" || ! mv -f "$t" "$p"; then rm -f "$t"; exit 5; fi
)";
}

std::string kill(std::string_view tag) {
  if (!valid_tag(tag)) throw SandboxError(Reason::INVALID_INPUT, "a command tag must be letters, digits, '-' or '_'");
  // grep -z reads each NUL-ended variable as a line, so -x matches a whole
  // one; without -z, tr makes lines of them, a process at a time. A process
  // killed a moment ago may still show its environment: the next round
  // kills it again, later rounds a little apart.
  return "t=" + quote("MAYURA_TAG=" + std::string(tag)) + "\n" +
         R"(if printf 'x\0' | grep -qzxF x 2>/dev/null; then z=1; else z=; fi
n=0
while :; do
  if [ -n "$z" ]; then
    f=$(grep -lzxF -e "$t" /proc/[0-9]*/environ 2>/dev/null)
  else
    f=
    for e in /proc/[0-9]*/environ; do
      if tr '\000' '\n' 2>/dev/null < "$e" | grep -qxF -e "$t"; then f="$f $e"; fi
    done
  fi
  p=
  for e in $f; do e=${e#/proc/}; p="$p ${e%/environ}"; done
  if [ -z "$p" ]; then break; fi
  kill -9 $p 2>/dev/null
  n=$((n + 1))
  if [ $n -ge 60 ]; then exit 7; fi
  if [ $n -ge 5 ]; then sleep 0.1 2>/dev/null || sleep 1; fi
done
)";
}

}  // namespace sandbox_scripts

namespace {

[[noreturn]] void malformed(const std::string& why) {
  throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed listing: " + why);
}

template <class T>
T number(std::string_view field, int base, const char* what) {
  T value{};
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value, base);
  if (field.empty() || error != std::errc{} || end != field.data() + field.size())
    malformed(std::string("bad ") + what);
  return value;
}

// "<seconds>" or "<seconds>.<fraction>", as stat's %.3Y gives it (BusyBox
// gives whole seconds).
std::int64_t mtime_ms(std::string_view field) {
  const bool negative = !field.empty() && field.front() == '-';
  if (negative) field.remove_prefix(1);
  const auto dot = field.find('.');
  const auto seconds = number<std::uint64_t>(field.substr(0, dot), 10, "mtime");
  std::int64_t millis = 0;
  if (dot != std::string_view::npos) {
    const std::string_view fraction = field.substr(dot + 1);
    number<std::uint64_t>(fraction, 10, "mtime");  // digits only
    for (std::size_t i = 0; i < 3; ++i) millis = millis * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
  }
  if (seconds > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / 1000 - 1))
    malformed("mtime out of range");
  const std::int64_t ms = static_cast<std::int64_t>(seconds) * 1000 + millis;
  return negative ? -ms : ms;
}

std::string name_from_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) malformed("bad name");
  std::string name;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    name.push_back(static_cast<char>(number<unsigned>(hex.substr(i, 2), 16, "name")));
  if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    malformed("bad name");
  }
  return name;
}

FileType type_of(std::uint32_t mode) {
  switch (mode & 0170000) {
    case 0100000: return FileType::file;
    case 0040000: return FileType::directory;
    case 0120000: return FileType::symlink;
    default: return FileType::other;
  }
}

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (start <= line.size()) {
    const auto space = std::min(line.find(' ', start), line.size());
    fields.push_back(line.substr(start, space - start));
    start = space + 1;
  }
  return fields;
}

FileEntry entry_of(std::string_view line) {
  const auto f = fields_of(line);
  if (f.size() != 4) malformed("an entry needs four fields");
  FileEntry e;
  const auto mode = number<std::uint32_t>(f[0], 16, "mode");
  e.type = type_of(mode);
  e.mode = mode & 07777;
  e.size = number<std::uint64_t>(f[1], 10, "size");
  e.mtime_ms = mtime_ms(f[2]);
  e.name = name_from_hex(f[3]);
  return e;
}

}  // namespace

std::vector<FileEntry> parse_sandbox_listing(std::string_view listing) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < listing.size()) {
    const auto newline = listing.find('\n', start);
    if (newline == std::string_view::npos) malformed("the last line is cut off");
    lines.push_back(listing.substr(start, newline - start));
    start = newline + 1;
  }
  if (lines.empty()) malformed("no count");
  const auto count = number<std::size_t>(lines[0], 10, "count");
  if (lines.size() - 1 != count) malformed("the count does not match the entries");
  std::vector<FileEntry> entries;
  entries.reserve(count);
  for (std::size_t i = 1; i < lines.size(); ++i) entries.push_back(entry_of(lines[i]));
  return entries;
}

}  // namespace mayura
