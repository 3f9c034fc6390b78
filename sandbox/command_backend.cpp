// The command backend: files by sandbox_scripts, exec by command_exec, and
// the end of the sandbox by the provider's release.

#include "mayura/command_backend.hpp"

#include <charconv>

#include "command_channel.hpp"
#include "command_exec.hpp"
#include "mayura/errors.hpp"
#include "mayura/random_id.hpp"
#include "mayura/sandbox_scripts.hpp"

namespace mayura {
namespace {

using detail::CommandChannel;
using detail::Fragment;
using detail::kChunkBytes;

constexpr std::uint64_t kDefaultMaxRead = std::uint64_t{64} << 20;

std::string random_suffix() { return random_hex(16); }

// The last component of a path a file can be written to: not empty, "."
// or "..".
void check_file_name(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  if (name.empty() || name == "." || name == "..") {
    throw SandboxError(Reason::INVALID_INPUT, "cannot write " + path + ": it names no file");
  }
}

// A temporary name in the same directory as `path` (so a rename moves it
// into place).
std::string temporary_beside(const std::string& path) {
  return path.substr(0, path.rfind('/') + 1) + ".mayura-write-" + random_suffix();
}

class CommandBackend final : public SandboxBackend {
 public:
  CommandBackend(std::string id, std::shared_ptr<CommandTransport> transport, std::function<void()> release)
      : id_(std::move(id)), channel_(std::move(transport)), release_(std::move(release)) {}
  ~CommandBackend() override { release(); }
  CommandBackend(const CommandBackend&) = delete;
  CommandBackend& operator=(const CommandBackend&) = delete;

  ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options) override {
    return detail::run_command(channel_, argv, options);
  }

  // In chunks, up to the size the first one reported (a file growing
  // meanwhile is read as it was); a short chunk ends it early.
  std::string read_file(const std::string& path, const ReadOptions& options) override {
    const std::uint64_t max = options.max_bytes.value_or(kDefaultMaxRead);
    std::string data;
    std::optional<std::uint64_t> size;
    for (;;) {
      const TransportResult r = channel_.run(sandbox_scripts::read_file(path, data.size(), kChunkBytes, max),
                                             std::nullopt, options.cancellation);
      if (r.exit_code != 0) throw sandbox_scripts::failure(r.exit_code, "cannot read " + path);
      const auto newline = r.stdout.find('\n');
      if (newline == std::string::npos) throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed file chunk");
      if (!size) size = parse_size(std::string_view(r.stdout).substr(0, newline));
      const std::string chunk = detail::decode_base64(std::string_view(r.stdout).substr(newline + 1));
      data += chunk;
      if (data.size() > max)
        throw SandboxError(Reason::LIMIT_REACHED, "cannot read " + path + ": larger than the limit");
      if (chunk.size() < kChunkBytes || data.size() >= *size) return data;
    }
  }

  // As the native provider does: parents made, the data written to a
  // temporary file beside the target, then renamed onto it with the old
  // file's mode. A failure or cancellation leaves no temporary file.
  void write_file(const std::string& path, std::string_view data, const FileOptions& options) override {
    check_file_name(path);
    const std::string temp = temporary_beside(path);
    std::vector<Fragment> fragments{{sandbox_scripts::prepare_write(path), std::nullopt}};
    auto chunks = channel_.upload(temp, data);
    fragments.insert(fragments.end(), chunks.begin(), chunks.end());
    fragments.push_back({sandbox_scripts::replace_file(temp, path), std::nullopt});
    TransportResult r;
    try {
      r = channel_.run_all(fragments, options.cancellation);
    } catch (...) {
      remove_quietly(temp);
      throw;
    }
    if (r.exit_code != 0) {
      remove_quietly(temp);
      throw sandbox_scripts::failure(r.exit_code, "cannot write " + path);
    }
  }

  std::vector<FileEntry> list(const std::string& path, const FileOptions& options) override {
    const TransportResult r = channel_.run(sandbox_scripts::list(path), std::nullopt, options.cancellation);
    if (r.exit_code != 0) throw sandbox_scripts::failure(r.exit_code, "cannot list " + path);
    return parse_sandbox_listing(r.stdout);
  }

  void remove(const std::string& path, const FileOptions& options) override {
    const TransportResult r = channel_.run(sandbox_scripts::remove(path), std::nullopt, options.cancellation);
    if (r.exit_code != 0) throw sandbox_scripts::failure(r.exit_code, "cannot remove " + path);
  }

  std::string url(int) override { throw SandboxError(Reason::UNSUPPORTED, "provider " + id_ + " serves no ports"); }

  void release() noexcept override {
    if (!channel_.close() || !release_) return;
    try {
      release_();
    } catch (...) {
      // release must not throw; the provider's own bound ends the sandbox.
    }
  }

  bool alive() const noexcept override { return channel_.usable(); }

 private:
  static std::uint64_t parse_size(std::string_view text) {
    std::uint64_t size = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), size);
    if (text.empty() || error != std::errc{} || end != text.data() + text.size()) {
      throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed file size");
    }
    return size;
  }

  // Not cancellable: it cleans up after a cancellation.
  void remove_quietly(const std::string& temp) noexcept {
    if (!channel_.usable()) return;
    try {
      channel_.run("rm -f " + sandbox_scripts::path_word(temp) + "\n", std::nullopt, {});
    } catch (...) {
      // The failure being reported matters more than a leftover file.
    }
  }

  const std::string id_;
  CommandChannel channel_;
  std::function<void()> release_;
};

}  // namespace

std::unique_ptr<SandboxBackend> command_sandbox_backend(std::string id, std::shared_ptr<CommandTransport> transport,
                                                        std::function<void()> release) {
  if (!transport) throw SandboxError(Reason::INVALID_INPUT, "the command transport is null");
  return std::make_unique<CommandBackend>(std::move(id), std::move(transport), std::move(release));
}

}  // namespace mayura
