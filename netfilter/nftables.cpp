#include "mayura/netfilter/nftables.hpp"
#include "mayura/runtime.hpp"

#include <nftables/libnftables.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace mayura::netfilter {
namespace {

struct ContextDeleter {
  void operator()(nft_ctx* c) const { nft_ctx_free(c); }
};

NftResult run_here(const std::string& commands) {
  NftResult result;
  std::unique_ptr<nft_ctx, ContextDeleter> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) {
    result.error = "libnftables could not make a context";
    return result;
  }
  // What nft would print, kept instead of written to our stdout and stderr.
  if (nft_ctx_buffer_output(ctx.get()) != 0 || nft_ctx_buffer_error(ctx.get()) != 0) {
    result.error = "libnftables could not buffer its output";
    return result;
  }
  result.ok = nft_run_cmd_from_buffer(ctx.get(), commands.c_str()) == 0;
  if (const char* out = nft_ctx_get_output_buffer(ctx.get())) result.output = out;
  if (const char* err = nft_ctx_get_error_buffer(ctx.get())) result.error = err;
  return result;
}

}  // namespace

NftResult run_nft(int netns_fd, const std::string& commands) noexcept {
  NftResult result;
  try {
    OwnedThread worker("mayura-nft", [&] {
      // libnftables' netlink socket must be made inside the namespace it
      // changes.
      if (::setns(netns_fd, CLONE_NEWNET) != 0) {
        result.error = std::string("entering the network namespace: ") + std::strerror(errno);
        return;
      }
      result = run_here(commands);
    });
    worker.join();
  } catch (const std::exception& e) {
    result.ok = false;
    result.error = e.what();
  }
  return result;
}

}  // namespace mayura::netfilter
