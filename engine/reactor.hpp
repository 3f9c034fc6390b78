#pragma once
// The engine's few threads for asynchronous commands: every async_exec of
// every native sandbox waits on these, so however many commands run at once
// the engine's threads stay as many as the host has cores (at least two).

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>

namespace mayura::native {

// Starts the threads at the first call; they last as long as the process.
boost::asio::any_io_executor reactor_executor();

// How many threads the reactor runs (for the benchmarks and tests).
std::size_t reactor_threads();

}  // namespace mayura::native
