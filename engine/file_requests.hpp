#pragma once
// read_file, write_file, list and remove of a native sandbox: each one
// request to the init, then a state machine on Asio, run on the engine's
// reactor (the async forms) or on the caller's own thread. `absolute` is the
// path inside the sandbox; `path` is the caller's, for messages.

#include <exception>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "mayura/types.hpp"
#include "native_sandbox.hpp"
#include "protocol.hpp"

namespace mayura::native::files {

struct FileOp {
  protocol::Request kind;
  std::string absolute;
  std::string path;
  const char* what;           // "cannot read", for messages
  std::size_t max_bytes = 0;  // of what a read or list takes
  std::string data;           // what a write writes
};
FileOp read_op(const std::string& absolute, const std::string& path, const ReadOptions& options);
FileOp write_op(const std::string& absolute, const std::string& path, std::string data);
FileOp list_op(const std::string& absolute, const std::string& path);
FileOp remove_op(const std::string& absolute, const std::string& path);

// What the helper sent (a read's bytes, a list's encoded entries; nothing
// for a write or remove), or the failure.
using FileDone = std::function<void(std::exception_ptr, std::string)>;

// Sends the request (what fails there is thrown, and `done` is not called)
// and supervises it on `executor`; `done` gets its end, once.
void start_file_call(std::shared_ptr<SandboxCore> core, FileOp op, std::stop_token cancellation,
                     const boost::asio::any_io_executor& executor, FileDone done);
// The same, on the calling thread.
std::string run_file_call(std::shared_ptr<SandboxCore> core, FileOp op, std::stop_token cancellation);

std::vector<FileEntry> decode_list(const std::string& bytes);

}  // namespace mayura::native::files
