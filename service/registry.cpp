#include "registry.hpp"

namespace mayura::service {
namespace {

// How long an ended sandbox's id still answers GONE before it is forgotten.
constexpr std::int64_t kKeepEndedMs = 10 * 60 * 1000;

bool ended(const Owned& o, std::int64_t now) { return now >= o.expires_at_ms || o.sandbox.released(); }

}  // namespace

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Owned Registry::create(const Sandboxes& sandboxes, const CreateOptions& options, const Client& client,
                       std::stop_token stop) {
  {
    std::lock_guard lock(mutex_);
    const std::int64_t now = now_ms();
    sweep_locked(now);
    if (alive_of_locked(client.name, now) + creating_[client.name] >= max_per_client_) {
      throw SandboxError(Reason::LIMIT_REACHED,
                         "this client has " + std::to_string(max_per_client_) + " sandboxes alive, its most");
    }
    ++creating_[client.name];
  }
  struct Unreserve {
    Registry* self;
    std::string owner;
    ~Unreserve() {
      std::lock_guard lock(self->mutex_);
      if (--self->creating_[owner] == 0) self->creating_.erase(owner);
    }
  } unreserve{this, client.name};
  const std::int64_t created = now_ms();
  Sandbox sandbox = sandboxes.create(options, std::move(stop));
  Owned owned{sandbox, client.name, created, created + options.lifetime_ms};
  std::lock_guard lock(mutex_);
  by_id_[sandbox.id()] = owned;
  return owned;
}

std::optional<Owned> Registry::find(const std::string& id, const Client& client) {
  std::lock_guard lock(mutex_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end() || (!client.admin && it->second.owner != client.name)) return std::nullopt;
  return it->second;
}

std::vector<Owned> Registry::list(const Client& client) {
  std::lock_guard lock(mutex_);
  const std::int64_t now = now_ms();
  sweep_locked(now);
  std::vector<Owned> out;
  for (const auto& [id, o] : by_id_) {
    if ((client.admin || o.owner == client.name) && !ended(o, now)) out.push_back(o);
  }
  return out;
}

void Registry::forget(const std::string& id) {
  std::lock_guard lock(mutex_);
  by_id_.erase(id);
}

void Registry::sweep_locked(std::int64_t now) {
  std::erase_if(by_id_, [&](const auto& entry) {
    const Owned& o = entry.second;
    if (o.sandbox.released()) return true;
    return now >= o.expires_at_ms + kKeepEndedMs;
  });
}

std::size_t Registry::alive_of_locked(const std::string& owner, std::int64_t now) const {
  std::size_t n = 0;
  for (const auto& [id, o] : by_id_) n += o.owner == owner && !ended(o, now);
  return n;
}

}  // namespace mayura::service
