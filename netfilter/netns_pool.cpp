#include "mayura/netfilter/netns_pool.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>

#include "mayura/netfilter/loopback.hpp"

namespace mayura::netfilter {
namespace {

// On the calling thread, which must be ours alone: move it into a new
// network namespace, bring up loopback, and return the namespace's fd. The
// thread stays in that namespace; callers are threads that end or loop.
int make_here() {
  if (::unshare(CLONE_NEWNET) != 0) return -1;
  UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!fd) return -1;
  const int err = bring_up_loopback(fd.get());
  if (err != 0) {
    fd.reset();
    errno = err;
    return -1;
  }
  return fd.release();
}

}  // namespace

int NetnsPool::make() {
  int fd = -1;
  int error = 0;
  try {
    OwnedThread worker("mayura-ns-make", [&] {
      fd = make_here();
      error = errno;
    });
    worker.join();
  } catch (...) {
    errno = EAGAIN;
    return -1;
  }
  if (fd < 0) errno = error;
  return fd;
}

NetnsPool::NetnsPool(std::size_t ready) : target_(ready) {
  if (target_ > 0) thread_ = OwnedThread("mayura-nspool", [this] { run(); });
}

NetnsPool::~NetnsPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int NetnsPool::take() {
  {
    std::lock_guard lock(mutex_);
    if (!ready_.empty()) {
      UniqueFd fd = std::move(ready_.front());
      ready_.pop_front();
      changed_.notify_all();
      return fd.release();
    }
  }
  return make();
}

void NetnsPool::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (ready_.size() >= target_) {
      changed_.wait(lock);
      continue;
    }
    lock.unlock();
    UniqueFd fd(make_here());
    lock.lock();
    if (fd) {
      ready_.push_back(std::move(fd));
    } else {
      // The host refuses for now (out of memory, a limit): try again later.
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
}

}  // namespace mayura::netfilter
