// mayura-run-local: the engine's side of mayura-run's main. A run goes
// through a daemon when one is chosen, else through an engine in this
// process, whose settings come from the environment.

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mayura/errors.hpp"
#include "mayura/images.hpp"
#include "mayura/native.hpp"
#include "run_engine.hpp"

namespace mayura::tools {
namespace {

NativeOptions engine_options_from_env() {
  NativeOptions o;
  // One sandbox per run: a namespace made ahead would only race this one.
  o.netns_pool = 0;
  o.prepared = 0;
  o.prepared_disks = 0;
  auto text = [](const char* name, std::string& into) {
    if (const char* v = std::getenv(name); v && *v) into = v;
  };
  auto number = [](const char* name, std::uint32_t& into) {
    if (const char* v = std::getenv(name); v && *v) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 0);
      if (*end != '\0' || n > 0xffffffffull) usage_error(std::string(name) + " is not a number");
      into = static_cast<std::uint32_t>(n);
    }
  };
  text("MAYURA_IMAGE_DIR", o.image_dir);
  text("MAYURA_IMAGE_STORE", o.image_store);
  text("MAYURA_STATE_DIR", o.state_dir);
  text("MAYURA_DISK_DIR", o.disk_dir);
  text("MAYURA_SNAPSHOT_DIR", o.snapshot_dir);
  text("MAYURA_VOLUME_DIR", o.volume_dir);
  text("MAYURA_CGROUP_ROOT", o.cgroup_root);
  number("MAYURA_ID_BASE", o.id_base);
  number("MAYURA_ID_SLOTS", o.id_slots);
  auto list = [](const char* name, std::vector<std::string>& into) {
    const char* v = std::getenv(name);
    if (!v) return;
    std::string item;
    for (const char* c = v;; ++c) {
      if (*c == ',' || *c == '\0') {
        if (!item.empty()) into.push_back(item);
        item.clear();
        if (*c == '\0') break;
      } else if (*c != ' ') {
        item.push_back(*c);
      }
    }
  };
  list("MAYURA_DNS_SERVERS", o.dns_servers);
  list("MAYURA_PUBLIC_RANGES", o.public_ranges);
  if (const char* v = std::getenv("MAYURA_ALLOW_PRIVATE")) o.allow_private_addresses = std::string(v) == "1";
  return o;
}

}  // namespace

void keep_command_line(char** /*argv*/) {}

RunEngine choose_engine(bool local) {
  if (auto address = daemon_address(local)) return remote_engine(*address);
  RunEngine engine;
  engine.provider = [provider = native_sandboxes(engine_options_from_env())] { return provider; };
  return engine;
}

std::string describe_host(bool local) {
  return std::string("mayura-run ") + MAYURA_VERSION + "\n" + describe_native_host(engine_options_from_env()) + "\n" +
         describe_engine_choice(local) + "\n";
}

std::vector<std::string> image_default_command(const std::string& image) {
  const char* dir = std::getenv("MAYURA_IMAGE_STORE");
  const auto store = ImageStore(dir && *dir ? dir : NativeOptions{}.image_store);
  ImageInfo info;
  try {
    info = store.inspect(image);
  } catch (const SandboxError&) {
    usage_error("no command given, and " + image + " is no image of the store to take one from");
  }
  std::vector<std::string> command = info.entrypoint;
  command.insert(command.end(), info.cmd.begin(), info.cmd.end());
  if (command.empty()) usage_error("no command given, and image " + image + " names none");
  return command;
}

}  // namespace mayura::tools
