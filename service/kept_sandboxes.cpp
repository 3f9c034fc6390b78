#include "kept_sandboxes.hpp"

#include <cstdio>

#include "wire.hpp"

namespace mayura::service {
namespace {

constexpr int kVersion = 1;

struct Kept {
  std::string id;
  std::string owner;
  std::int64_t created_at_ms = 0;
  std::int64_t memory_mib = 0;
  std::int64_t disk_mib = 0;
  CreateOptions options;
};

// The create's options as the HTTP API has them, with what no client may
// send beside them (who the sandbox is for, and who may reach its ports).
Kept kept_from(const std::string& record) {
  try {
    json j = json::parse(record);
    if (j.at("version").get<int>() != kVersion)
      throw SandboxError(Reason::INTERNAL, "its record is of another version");
    Kept k;
    k.id = j.at("id").get<std::string>();
    k.owner = j.at("owner").get<std::string>();
    k.created_at_ms = j.at("createdAt").get<std::int64_t>();
    k.memory_mib = j.at("memoryMiB").get<std::int64_t>();
    k.disk_mib = j.at("diskMiB").get<std::int64_t>();
    k.options = create_from(j.at("options"));
    k.options.tenant = j.at("tenant").get<std::string>();
    if (j.contains("portsOwner")) k.options.ports_owner = j.at("portsOwner").get<std::uint32_t>();
    return k;
  } catch (const json::exception& e) {
    throw SandboxError(Reason::INTERNAL, std::string("its record cannot be read: ") + e.what());
  }
}

}  // namespace

std::string kept_record(const Owned& owned) {
  const CreateOptions& options = owned.sandbox.created();
  json j = {{"version", kVersion},
            {"id", owned.sandbox.id()},
            {"owner", owned.owner},
            {"createdAt", owned.created_at_ms},
            {"memoryMiB", owned.memory_mib},
            {"diskMiB", owned.disk_mib},
            {"options", create_json(options)},
            {"tenant", options.tenant}};
  if (options.ports_owner) j["portsOwner"] = *options.ports_owner;
  return dump(j);
}

std::size_t take_back_sandboxes(SandboxProvider& provider, const Sandboxes& sandboxes, Registry& registry) {
  std::size_t taken = 0;
  for (SandboxProvider::Restored& restored : provider.restore()) {
    std::shared_ptr<SandboxBackend> backend(std::move(restored.backend));
    try {
      const Kept k = kept_from(restored.record);
      const Sandbox sandbox = sandboxes.take_back(backend, k.options, k.id, restored.remaining_ms, restored.paused);
      registry.take_back(
          Owned{sandbox, k.owner, k.created_at_ms, now_ms() + restored.remaining_ms, k.memory_mib, k.disk_mib});
      ++taken;
    } catch (const SandboxError& e) {
      std::fprintf(stderr, "mayurad: a sandbox the daemon before kept cannot be served again (%s): it is released\n",
                   e.what());
      backend->release();
    }
  }
  return taken;
}

}  // namespace mayura::service
