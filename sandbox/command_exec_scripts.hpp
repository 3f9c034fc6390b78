#pragma once
// The scripts of a command run by the command backend: it starts in the
// background, in a directory of its own (/tmp/.mayura-cmd-<tag>), and is
// polled there until its exit status appears.
//
// The directory holds: in (standard input, if any), args (the arguments, when
// too long for the command line), pid (the wrapper's), out, err, and status
// (the exit code, written in one write once the command ended).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mayura::detail::exec_scripts {

std::string directory_of(std::string_view tag);

// Makes the command's directory (it must not be there yet).
std::string make_directory(std::string_view dir);

// The arguments of the wrapper, as shell words: the cwd, "env" or "exec"
// (how the command starts), the environment assignments (MAYURA_TAG last, so
// a caller's own cannot hide the command from kill), then argv.
std::string argument_words(const std::string& cwd, const std::map<std::string, std::string>& env, std::string_view tag,
                           const std::vector<std::string>& argv);
// The same, as a file the wrapper sources.
std::string arguments_file(const std::string& words);

// Starts the wrapper in a session of its own and returns at once. `words`
// none: the wrapper reads them from the directory's args file.
std::string launch(std::string_view dir, std::string_view tag, const std::optional<std::string>& words);

// What one poll asks for: up to `length` bytes of each stream from `offset`.
// When the exit status is there (or the command has `ended` by a kill) and
// each stream is no larger than its `complete_at` (every byte wanted is then
// in this answer), the poll removes the directory.
struct StreamRequest {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t complete_at = 0;
};

// Prints "<status or -> <wrapper: 1 alive, 0 gone, - not started yet> <out
// size> <err size>", the out chunk in base64, a line "-", the err chunk in
// base64.
std::string poll(std::string_view dir, const StreamRequest& out, const StreamRequest& err, bool ended = false);

// Waits a little for the status (40 sleeps of a millisecond at most, some
// 50 to 100 ms in all), so that a quick command is seen done by the poll in
// the same call as its start.
std::string wait_briefly(std::string_view dir);

std::string remove_directory(std::string_view dir);

}  // namespace mayura::detail::exec_scripts
