#pragma once
// Disks made ahead: a create that asks for a new disk of the size and owner
// the last such create asked for takes one already made, attached and
// mounted, and pays none of that (a loop device bound, an ext4 mounted:
// about 4 ms here). Refills run on the runtime's blocking threads once the
// callers have been quiet for a while (as sandboxes made ahead do, see
// activity.hpp), one at a time; a create of another size or owner makes its
// own, and the disks of the old kind go. Disks over kMostMiB are never made
// ahead: each reserves its whole size on the host while it waits.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

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
  // `size` 0 keeps none. `runtime` outlives the pool; `make` is never
  // called once the pool is gone.
  PreparedDisks(std::size_t size, Make make, std::shared_ptr<Activity> activity, Runtime& runtime);
  // Waits for a disk being made, then removes the disks still waiting. A
  // refill queued on the runtime and started later finds the pool gone.
  ~PreparedDisks();
  PreparedDisks(const PreparedDisks&) = delete;
  PreparedDisks& operator=(const PreparedDisks&) = delete;

  // A disk of `kind` made ahead, or an empty one (the caller makes its
  // own); either way, the next disks made ahead are of `kind`.
  SandboxDisk take(const Kind& kind);

 private:
  struct State;  // shared with the refill under way, which may outlive the pool
  const std::size_t size_;
  Runtime& runtime_;
  std::shared_ptr<State> state_;
};

}  // namespace mayura::native
