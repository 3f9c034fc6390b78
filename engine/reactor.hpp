#pragma once
// What the engine's asynchronous calls share on the provider's reactor
// (Runtime::executor): every async_exec of every native sandbox waits there,
// so however many commands run at once the engine's threads stay as many as
// the host has cores (at least two).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cstddef>
#include <memory>

#include "mayura/base/unique_fd.hpp"

namespace mayura::native {

// Hands `fd` to `stream`, which owns it from then on. A reactor that refuses
// it for a host limit (memory, as fail_step names it; the epoll watch limit)
// fails LIMIT_REACHED with `step` named, and `fd` stays owned by the caller.
void watch_fd(boost::asio::posix::stream_descriptor& stream, UniqueFd& fd, const char* step);

// A std::stop_callback's callable for a call that runs on a strand: the stop
// comes from whatever thread requests it, and `Handle` runs on the strand, if
// the call is still there.
template <class Owner, void (Owner::*Handle)()>
struct StopOnStrand {
  std::weak_ptr<Owner> owner;
  boost::asio::strand<boost::asio::any_io_executor> strand;
  void operator()() const noexcept {
    boost::asio::post(strand, [owner = owner] {
      if (auto self = owner.lock()) ((*self).*Handle)();
    });
  }
};

}  // namespace mayura::native
