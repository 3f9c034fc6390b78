#pragma once
// Which client owns which sandbox. A client sees and touches only its own:
// another's id is as unknown to it as one that never was. An admin (root on
// the Unix socket) sees every one.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "mayura/sandboxes.hpp"

namespace mayura::service {

struct Client {
  std::string name;  // "uid:1000", or the name a token file gives
  bool admin = false;
  // A local peer's uid, the owner of its sandboxes' published ports; none
  // for a token's client (whose ports only root can reach).
  std::optional<std::uint32_t> uid;
};

struct Owned {
  Sandbox sandbox;
  std::string owner;
  std::int64_t created_at_ms = 0;  // since the epoch
  std::int64_t expires_at_ms = 0;
  std::int64_t memory_mib = 0;  // its bound, counted against its owner's
  std::int64_t disk_mib = 0;    // its disk's size, the same way
};

// What one client may hold at once.
struct ClientQuota {
  std::size_t sandboxes = 16;
  // The sum of its sandboxes' memory bounds; 0: none.
  std::int64_t memory_mib = 0;
  // The sum of its sandboxes' disks; 0: none.
  std::int64_t disk_mib = 0;
  // The sum of its snapshots' sizes on the host; 0: none.
  std::int64_t snapshot_mib = 0;
  // The sum of its volumes' sizes; 0: none.
  std::int64_t volume_mib = 0;
};

class Registry {
 public:
  // `keep`: live restore; each sandbox made here keeps what a later server
  // needs to serve it again (kept_sandboxes.hpp), and a failure to keep it
  // fails its create.
  explicit Registry(ClientQuota quota, bool keep = false) : quota_(quota), keep_(keep) {}
  const ClientQuota& quota() const { return quota_; }

  // Creates a sandbox for `client`, within its quota: LIMIT_REACHED past its
  // count of sandboxes, INVALID_INPUT past its memory or its disks (naming
  // the setting), before anything is made. The create's memory_mib and
  // disk_mib are what is counted.
  Owned create(const Sandboxes& sandboxes, const CreateOptions& options, const Client& client, std::stop_token stop);
  // `count` sandboxes from a copy of `original`'s disk, each for
  // `lifetime_ms`, its owner's, within its owner's quota as `count` creates
  // like the original's would be; all or none.
  std::vector<Owned> fork(const Owned& original, int count, std::int64_t lifetime_ms);
  // The client's sandbox `id`, or none when it has none of that id.
  std::optional<Owned> find(const std::string& id, const Client& client);
  std::vector<Owned> list(const Client& client);
  // Forgets a released sandbox: its id is unknown from now on.
  void forget(const std::string& id);
  // A sandbox an earlier server left, taken back as it was.
  void take_back(const Owned& owned);

 private:
  // Drops sandboxes that have ended (their lifetime is over or they were
  // released) once a while after: until then their id answers GONE.
  void sweep_locked(std::int64_t now_ms);
  // What an owner holds now: its sandboxes alive and their memory, with the
  // creates under way.
  struct Held {
    std::size_t sandboxes = 0;
    std::int64_t memory_mib = 0;
    std::int64_t disk_mib = 0;
  };
  Held held_by_locked(const std::string& owner, std::int64_t now_ms) const;
  // Sandboxes being made for `owner`, counted as held until it goes.
  struct Reservation {
    Reservation(Registry* registry, std::string who, Held what) : self(registry), owner(std::move(who)), held(what) {}
    Registry* self;
    std::string owner;
    Held held;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();
  };
  // Reserves `count` sandboxes of `memory` and `disk` each, or throws as
  // create() says.
  Reservation reserve(const std::string& owner, std::size_t count, std::int64_t memory, std::int64_t disk);

  // Keeps what a later server needs with each new sandbox, or releases it
  // and throws.
  void keep(const Owned& owned) const;

  const ClientQuota quota_;
  const bool keep_;
  std::mutex mutex_;
  std::map<std::string, Owned> by_id_;
  std::map<std::string, Held> creating_;  // creates under way, by owner
};

std::int64_t now_ms();

}  // namespace mayura::service
