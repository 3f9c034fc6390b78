#include "netns_thread.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>

#include "mayura/errors.hpp"
#include "mayura/runtime.hpp"

namespace mayura::netfilter {

void run_in_netns(int netns_fd, const std::function<void()>& work) {
  std::exception_ptr failure;
  try {
    OwnedThread worker("mayura-in-netns", [&] {
      try {
        if (::setns(netns_fd, CLONE_NEWNET) != 0) {
          throw SandboxError(Reason::INTERNAL, std::string("entering the network namespace: ") + std::strerror(errno));
        }
        work();
      } catch (...) {
        failure = std::current_exception();
      }
    });
    worker.join();
  } catch (const std::system_error& e) {
    throw SandboxError(Reason::INTERNAL, std::string("starting a thread for the network namespace: ") + e.what());
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace mayura::netfilter
