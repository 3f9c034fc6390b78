#pragma once
// POSIX shell scripts for a provider whose API only runs commands (the seed's
// sandboxScripts): each function returns the text of one script, for
// `sh -c`, with every argument single-quoted into it. They run under dash,
// bash and BusyBox sh, with the tools of coreutils or BusyBox (stat, base64,
// od, awk, dd, head, tail, grep).
//
// Relative paths resolve against the directory the script runs in (the
// sandbox's workdir, for a transport that starts commands there). A script
// that fails exits with one of the codes below; failure() turns the code
// into the SandboxError a caller sees.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/errors.hpp"
#include "mayura/types.hpp"

namespace mayura {
namespace sandbox_scripts {

// Exit codes, beyond 0 (done). Any other code means the script itself
// broke (a tool missing, /tmp full): INTERNAL.
inline constexpr int kNotFound = 3;    // NOT_FOUND: the path is not there
inline constexpr int kInvalid = 4;     // INVALID_INPUT: a directory where a file belongs, or the like
inline constexpr int kDenied = 5;      // PERMISSION_DENIED
inline constexpr int kTooLarge = 6;    // LIMIT_REACHED: a file over the read limit, or no space left
inline constexpr int kNotStopped = 7;  // kill: processes of the tag kept coming back

// The error for a script's nonzero exit code, saying `what` failed (as
// "cannot read notes.txt").
SandboxError failure(int exit_code, std::string_view what);

// `word` as one shell word: 'single-quoted', any bytes but NUL.
std::string quote(std::string_view word);
// A path as one shell word that no tool takes for an option and cd never
// looks up in CDPATH: a relative path gets "./" in front.
std::string path_word(std::string_view path);

// The file's size (a decimal line), then `length` bytes of it from `offset`
// in base64 (wrapped in lines). A file larger than `max_bytes` fails
// kTooLarge; a directory or anything but a regular file kInvalid.
std::string read_file(std::string_view path, std::uint64_t offset, std::uint64_t length, std::uint64_t max_bytes);

// The entries of a directory (not . and ..), as parse_sandbox_listing reads
// them: a line with their count, then one line per entry:
//   <st_mode in hex> <size> <mtime in seconds, maybe with a fraction> <name as hex bytes>
// Symlinks are listed as themselves. Not a directory fails kInvalid.
std::string list(std::string_view path);

// Removes a file, a symlink (not what it points to) or a directory with
// everything in it.
std::string remove(std::string_view path);

// Before writing `path` by way of a temporary file beside it: fails
// kInvalid if it is a directory or not a regular file, and makes its
// parent directories (as the native provider does).
std::string prepare_write(std::string_view path);

enum class WriteMode { truncate, append };
// Decodes base64 into `path`. From the script's standard input when
// `base64` is none; else the text travels inside the script.
std::string write_chunk(std::string_view path, WriteMode mode, std::optional<std::string_view> base64 = std::nullopt);

// Moves a written `temp` file onto `path` in one rename, with the mode the
// file had (0644 for a new one), so a reader never sees half a file.
std::string replace_file(std::string_view temp, std::string_view path);

// Sends SIGKILL to every process whose environment holds exactly
// MAYURA_TAG=<tag>, and again until none is left, so a process forking as
// fast as it can does not escape. `tag` must be letters, digits, '-' or '_'.
std::string kill(std::string_view tag);

}  // namespace sandbox_scripts

// The entries of a sandbox_scripts::list output. Throws
// SandboxError(INTERNAL) on anything malformed: a count that does not match,
// a field that is not a number, a name that is empty, ".", "..", or holds a
// '/' or NUL.
std::vector<FileEntry> parse_sandbox_listing(std::string_view listing);

}  // namespace mayura
