#pragma once
// A provider whose sandboxes live in memory (files in a map; exec is never
// run), for the harnesses that drive the layers above a provider
// (service_requests, mcp_messages) without making a sandbox.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mayura/errors.hpp"
#include "mayura/provider.hpp"

namespace mayura::fuzz {

class MemoryBackend final : public SandboxBackend {
 public:
  ExecResult exec(const std::vector<std::string>&, const ExecOptions&) override {
    throw SandboxError(Reason::UNSUPPORTED, "the fuzzer's sandboxes run nothing");
  }
  std::string read_file(const std::string& path, const ReadOptions&) override {
    std::lock_guard lock(mutex_);
    const auto it = files_.find(path);
    if (it == files_.end()) throw SandboxError(Reason::NOT_FOUND, "no such file: " + path);
    return it->second;
  }
  void write_file(const std::string& path, std::string_view data, const FileOptions&) override {
    std::lock_guard lock(mutex_);
    files_[path] = std::string(data);
  }
  std::vector<FileEntry> list(const std::string&, const FileOptions&) override {
    std::lock_guard lock(mutex_);
    std::vector<FileEntry> out;
    for (const auto& [path, data] : files_) {
      FileEntry e;
      e.name = path.substr(path.rfind('/') + 1);
      if (e.name.empty()) continue;
      e.size = data.size();
      out.push_back(std::move(e));
    }
    return out;
  }
  void remove(const std::string& path, const FileOptions&) override {
    std::lock_guard lock(mutex_);
    if (files_.erase(path) == 0) throw SandboxError(Reason::NOT_FOUND, "no such file: " + path);
  }
  std::string url(int port) override { return "http://127.0.0.1:" + std::to_string(port); }
  void release() noexcept override { alive_ = false; }
  bool alive() const noexcept override { return alive_; }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> files_;
  bool alive_ = true;
};

class MemoryProvider final : public SandboxProvider {
 public:
  std::string id() const override { return "memory"; }
  Features features() const override {
    Features f;
    f.stdin = true;
    f.network = {NetworkKind::none};
    return f;
  }
  std::string workdir() const override { return "/work"; }
  std::int64_t max_lifetime_ms() const override { return 60'000; }
  std::unique_ptr<SandboxBackend> create(const CreateOptions&, std::stop_token) override {
    return std::make_unique<MemoryBackend>();
  }
};

}  // namespace mayura::fuzz
