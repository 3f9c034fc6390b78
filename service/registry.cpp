#include "registry.hpp"

#include "kept_sandboxes.hpp"

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

Registry::Reservation::~Reservation() {
  std::lock_guard lock(self->mutex_);
  Held& reserved = self->creating_[owner];
  reserved.memory_mib -= held.memory_mib;
  reserved.disk_mib -= held.disk_mib;
  reserved.sandboxes -= held.sandboxes;
  if (reserved.sandboxes == 0) self->creating_.erase(owner);
}

Registry::Reservation Registry::reserve(const std::string& owner, std::size_t count, std::int64_t memory,
                                        std::int64_t disk) {
  std::lock_guard lock(mutex_);
  const std::int64_t now = now_ms();
  sweep_locked(now);
  const Held held = held_by_locked(owner, now);
  const auto n = static_cast<std::int64_t>(count);
  if (held.sandboxes + count > quota_.sandboxes) {
    throw SandboxError(Reason::LIMIT_REACHED, "this client has " + std::to_string(held.sandboxes) +
                                                  " sandboxes alive, and may have " + std::to_string(quota_.sandboxes) +
                                                  " at most");
  }
  if (quota_.memory_mib > 0 && held.memory_mib + n * memory > quota_.memory_mib) {
    throw SandboxError(Reason::INVALID_INPUT,
                       "memory_mib " + std::to_string(n * memory) + " with this client's sandboxes' " +
                           std::to_string(held.memory_mib) + " is over the operator's ceiling of " +
                           std::to_string(quota_.memory_mib) + " (mayurad's maxMemoryMiBPerClient)");
  }
  if (quota_.disk_mib > 0 && held.disk_mib + n * disk > quota_.disk_mib) {
    throw SandboxError(Reason::INVALID_INPUT, "disk_mib " + std::to_string(n * disk) + " with this client's disks' " +
                                                  std::to_string(held.disk_mib) +
                                                  " is over the operator's ceiling of " +
                                                  std::to_string(quota_.disk_mib) + " (mayurad's maxDiskMiBPerClient)");
  }
  Held& reserved = creating_[owner];
  reserved.sandboxes += count;
  reserved.memory_mib += n * memory;
  reserved.disk_mib += n * disk;
  return Reservation{this, owner, {count, n * memory, n * disk}};
}

Owned Registry::create(const Sandboxes& sandboxes, const CreateOptions& options, const Client& client,
                       std::stop_token stop) {
  const std::int64_t memory = options.memory_mib.value_or(0);
  const std::int64_t disk = options.disk_mib.value_or(0);
  const Reservation reserved = reserve(client.name, 1, memory, disk);
  const std::int64_t created = now_ms();
  Sandbox sandbox = sandboxes.create(options, std::move(stop));
  Owned owned{sandbox, client.name, created, created + options.lifetime_ms, memory, disk};
  keep(owned);
  std::lock_guard lock(mutex_);
  by_id_[sandbox.id()] = owned;
  return owned;
}

std::vector<Owned> Registry::fork(const Owned& original, int count, std::int64_t lifetime_ms) {
  if (count < 1 || count > 64) throw SandboxError(Reason::INVALID_INPUT, "a fork makes 1 to 64 sandboxes");
  // The forks are the original's owner's (root may fork anyone's): in its
  // quota, under its name.
  const std::string& owner = original.owner;
  const Reservation reserved = reserve(owner, static_cast<std::size_t>(count), original.memory_mib, original.disk_mib);
  const std::int64_t created = now_ms();
  std::vector<Owned> made;
  for (const Sandbox& sandbox : original.sandbox.fork(count, lifetime_ms)) {
    made.push_back({sandbox, owner, created, created + lifetime_ms, original.memory_mib, original.disk_mib});
  }
  try {
    for (const Owned& o : made) keep(o);
  } catch (...) {
    for (const Owned& o : made) o.sandbox.release();
    throw;
  }
  std::lock_guard lock(mutex_);
  for (const Owned& o : made) by_id_[o.sandbox.id()] = o;
  return made;
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

void Registry::keep(const Owned& owned) const {
  if (!keep_) return;
  try {
    owned.sandbox.keep(kept_record(owned));
  } catch (...) {
    owned.sandbox.release();
    throw;
  }
}

void Registry::take_back(const Owned& owned) {
  std::lock_guard lock(mutex_);
  by_id_[owned.sandbox.id()] = owned;
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

Registry::Held Registry::held_by_locked(const std::string& owner, std::int64_t now) const {
  Held held;
  if (const auto it = creating_.find(owner); it != creating_.end()) held = it->second;
  for (const auto& [id, o] : by_id_) {
    if (o.owner != owner || ended(o, now)) continue;
    ++held.sandboxes;
    held.memory_mib += o.memory_mib;
    held.disk_mib += o.disk_mib;
  }
  return held;
}

}  // namespace mayura::service
