#include "command_exec_scripts.hpp"

#include <algorithm>
#include <limits>

#include "mayura/sandbox_scripts.hpp"

namespace mayura::detail::exec_scripts {
namespace {

using sandbox_scripts::quote;

// Runs as `sh -c WRAPPER sh DIR [WORDS...]`. It catches the signals a
// command might send its process group, so that it lives to write the exit
// status; the subshell and the command get the default actions back. A
// caller's environment goes through env, so a name a shell keeps read-only
// (PPID, UID) reaches the command as it would from execve; so does a command
// whose name starts with '-' (exec would take it for an option).
constexpr std::string_view kWrapper = R"(d=$1; shift
if [ $# -eq 0 ]; then . "$d/args" || exit 9; fi
c=$1; n=$2; shift 2
trap : HUP INT QUIT TERM
echo $$ > "$d/pid"
(
  if ! cd "$c" 2>/dev/null; then printf 'mayura: cannot enter %s\n' "$c" >&2; exit 126; fi
  if [ -e "$d/in" ]; then exec < "$d/in"; fi
  if [ "$n" = env ]; then exec env -- "$@"; fi
  exec "$@"
) < /dev/null > "$d/out" 2> "$d/err"
echo $? > "$d/status"
)";

std::string number(std::uint64_t n) {
  return std::to_string(
      std::min<std::uint64_t>(n, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
}

// The text that writes the wanted part of a stream file in base64, if the
// file (its size in `size_var`) grew past what was read.
std::string chunk(std::string_view file, std::string_view size_var, const StreamRequest& r) {
  if (r.length == 0) return "";
  return "if [ \"$" + std::string(size_var) + "\" -gt " + number(r.offset) + " ]; then tail -c +" +
         number(r.offset + 1) + " \"$d/" + std::string(file) + "\" 2>/dev/null | head -c " + number(r.length) +
         " | base64 || exit 9; fi\n";
}

}  // namespace

std::string directory_of(std::string_view tag) { return "/tmp/.mayura-cmd-" + std::string(tag); }

std::string make_directory(std::string_view dir) { return "mkdir -m 700 " + quote(dir) + " || exit 9\n"; }

std::string argument_words(const std::string& cwd, const std::map<std::string, std::string>& env, std::string_view tag,
                           const std::vector<std::string>& argv) {
  std::string words = sandbox_scripts::path_word(cwd.empty() ? "." : cwd);
  const bool through_env = !env.empty() || (!argv.front().empty() && argv.front().front() == '-');
  words += through_env ? " env" : " exec";
  // Each word appended in place: `" " + quote(...)` makes GCC 12's -O3
  // see a memcpy it cannot bound and stop a Release build (-Werror=restrict).
  auto add = [&words](const std::string& word) {
    words += ' ';
    words += word;
  };
  for (const auto& [name, value] : env) add(quote(name + "=" + value));
  if (!env.empty()) add(quote("MAYURA_TAG=" + std::string(tag)));
  // env would take a command named like an assignment for one more; a
  // shell runs it by name instead.
  if (through_env && argv.front().find('=') != std::string::npos) add("/bin/sh -c 'exec \"$@\"' sh");
  for (const auto& arg : argv) add(quote(arg));
  return words;
}

std::string arguments_file(const std::string& words) { return "set -- " + words + "\n"; }

std::string launch(std::string_view dir, std::string_view tag, const std::optional<std::string>& words) {
  // setsid twice: the first makes a process group leader, so the second
  // forks and returns at once, and the wrapper is no background job of
  // this shell (a shell starts those with SIGINT and SIGQUIT ignored, and
  // the command would inherit that). Without setsid, a background job it
  // is.
  std::string s = "d=" + quote(dir) + " w=" + quote(kWrapper) + "\n";
  s += ": > \"$d/out\" && : > \"$d/err\" || exit 9\n";
  const std::string start = "MAYURA_TAG=" + quote(tag) + " $s sh -c \"$w\" sh \"$d\"" +
                            (words ? " " + *words : std::string()) + " < /dev/null > /dev/null 2>&1";
  s += "if command -v setsid > /dev/null 2>&1; then\n  s='setsid setsid'\n  " + start + " || exit 9\nelse\n  s=\n  " +
       start + " &\nfi\n";
  return s;
}

std::string poll(std::string_view dir, const StreamRequest& out, const StreamRequest& err, bool ended) {
  // Alive is asked before the status is read: a wrapper gone by then had
  // written its status, if it ever would.
  std::string s = "d=" + quote(dir) + "\n";
  s += R"(a=-
if { read -r w < "$d/pid"; } 2>/dev/null; then if kill -0 "$w" 2>/dev/null; then a=1; else a=0; fi; fi
{ read -r x < "$d/status"; } 2>/dev/null || x=-
[ -n "$x" ] || x=-
z='0 0'
if [ -s "$d/out" ] || [ -s "$d/err" ]; then z=$(stat -c %s "$d/out" "$d/err") || exit 9; fi
set -- $z
echo "$x $a $1 $2"
o=$1 e=$2
)";
  s += chunk("out", "o", out);
  s += "echo -\n";
  s += chunk("err", "e", err);
  s += std::string("if ") + (ended ? "" : "[ \"$x\" != - ] && ") + "[ \"$o\" -le " + number(out.complete_at) +
       " ] && [ \"$e\" -le " + number(err.complete_at) + " ]; then rm -rf \"$d\"; fi\n";
  return s;
}

std::string wait_briefly(std::string_view dir) {
  // A fraction of a second is not POSIX: a sleep without it ends the wait.
  return "i=0\nwhile [ ! -s " + quote(std::string(dir) + "/status") +
         " ] && [ $i -lt 40 ]; do sleep 0.001 2>/dev/null || break; i=$((i + 1)); done\n";
}

std::string remove_directory(std::string_view dir) { return "rm -rf " + quote(dir) + "\n"; }

}  // namespace mayura::detail::exec_scripts
