#pragma once
// Disks made ahead: a create that asks for a new disk of the size and owner
// the last such create asked for takes one already made, attached and
// mounted, and pays none of that (a loop device bound, an ext4 mounted:
// about 4 ms here). Refills run on the runtime's blocking threads once the
// callers have been quiet for a while (as sandboxes made ahead do, see
// activity.hpp), one at a time; a create of another size or owner makes its
// own, and the disks of the old kind go. Disks over kMostMiB are never made
// ahead: each reserves its whole size on the host while it waits.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>

#include "activity.hpp"
#include "sandbox_disk.hpp"

#include "mayura/runtime.hpp"

namespace mayura::native {

class PreparedDisks {
 public:
  struct Kind {
    std::uint64_t mib = 0;
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    bool operator==(const Kind&) const = default;
  };
  static constexpr std::uint64_t kMostMiB = 4096;
  using Make = std::function<SandboxDisk(const Kind&)>;
  // `size` 0 keeps none. `activity` and `runtime` outlive the pool.
  PreparedDisks(std::size_t size, Make make, Activity& activity, Runtime& runtime);
  // Waits for a refill under way, then removes the disks still waiting.
  ~PreparedDisks();
  PreparedDisks(const PreparedDisks&) = delete;
  PreparedDisks& operator=(const PreparedDisks&) = delete;

  // A disk of `kind` made ahead, or an empty one (the caller makes its
  // own); either way, the next disks made ahead are of `kind`.
  SandboxDisk take(const Kind& kind);

 private:
  // Makes disks of the wanted kind until there are `size_`, on a blocking
  // thread; ends at the first failure (the next take starts it again).
  void refill();
  const std::size_t size_;
  const Make make_;
  Activity& activity_;
  Runtime& runtime_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<std::pair<Kind, SandboxDisk>> ready_;
  std::optional<Kind> wanted_;
  bool filling_ = false;
  bool stopping_ = false;
  std::stop_source stop_;
};

}  // namespace mayura::native
