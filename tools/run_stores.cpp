// `mayura-run snapshot` and `mayura-run volume` (run_stores.hpp).

#include "run_stores.hpp"

#include <ctime>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "run_args.hpp"
#include "run_engine.hpp"
#include "mayura/sandboxes.hpp"

namespace mayura::tools {

// A snapshot as mayurad's API writes one.
nlohmann::json snapshot_json(const mayura::Snapshot& s) {
  return {{"name", s.name}, {"diskMiB", s.disk_mib}, {"storedBytes", s.stored_bytes}, {"createdAt", s.created_ms}};
}

// A volume as mayurad's API writes one.
nlohmann::json volume_json(const mayura::Volume& v) {
  return {{"name", v.name}, {"sizeMiB", v.size_mib}, {"createdAt", v.created_ms}, {"inUse", v.in_use}};
}

namespace {

const char* kSnapshotUsage = R"(usage: mayura-run snapshot [--local] COMMAND

  list [--json]     the snapshots: each one's name, the size of a disk made
                    from it, what it takes on the host, and when it was taken
                    (--json: an array of {name, diskMiB, storedBytes,
                    createdAt}, createdAt in ms since the Unix epoch)
  delete NAME...    delete snapshots (rm is the same); one that is not there
                    is said, and the exit status is 125
  --local           the snapshots of an engine in this process, never a
                    daemon's

Take one with `mayura-run --disk MIB --snapshot-to NAME -- COMMAND`, start
from it with `mayura-run --from-snapshot NAME -- COMMAND`. They are the
daemon's when runs go through one (each of its clients has its own), else
those of MAYURA_SNAPSHOT_DIR (default /var/lib/mayura/snapshots): the two are
not the same snapshots.
)";

// "2026-12-06 13:44:28" (UTC), from ms since the Unix epoch.
std::string utc_time(std::int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  char buf[32] = "?";
  if (::gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string mebibytes(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The words of `mayura-run snapshot|volume ...`: --local and --json, then
// the command and its names. For --help, or no command, the usage is
// printed and `exit` is the status to end with (else -1).
struct StoreCommand {
  int exit = -1;
  bool local = false;
  bool json = false;
  std::string command;
  std::vector<std::string> words;
};

template <class Bad>
StoreCommand parse_store_command(int argc, char** argv, const char* usage, const Bad& bad) {
  StoreCommand parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      parsed.exit = 0;
      return parsed;
    }
    if (arg == "--local") {
      parsed.local = true;
    } else if (arg == "--json") {
      parsed.json = true;
    } else if (arg.rfind('-', 0) == 0) {
      bad("unknown option " + arg);
    } else {
      parsed.words.push_back(arg);
    }
  }
  if (parsed.words.empty()) {
    std::fputs(usage, stderr);
    parsed.exit = kSandboxFailed;
    return parsed;
  }
  parsed.command = parsed.words.front();
  parsed.words.erase(parsed.words.begin());
  return parsed;
}

// Runs `body` on the sandboxes of the engine a run would use (a daemon's if
// one is on its unix socket, unless `local`), refusing an engine without
// `feature` ("keeps no WHAT"). A failure is said; the status is then 125.
int with_store_engine(bool local, bool mayura::Features::*feature, const char* what,
                      const std::function<int(const mayura::Sandboxes&)>& body) {
  try {
    const auto engine = mayura::tools::choose_engine(local);
    const auto sandboxes = mayura::create_sandboxes(engine.provider(), mayura::SandboxesOptions{});
    if (!(sandboxes.features().*feature)) {
      throw mayura::SandboxError(
          mayura::Reason::INVALID_INPUT,
          (engine.daemon.empty() ? std::string("this engine") : engine.daemon) + " keeps no " + what);
    }
    return body(sandboxes);
  } catch (const mayura::SandboxError& e) {
    std::fprintf(stderr, "mayura-run: %s: %s\n", std::string(mayura::reason_name(e.reason())).c_str(), e.what());
    return kSandboxFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mayura-run: INTERNAL: %s\n", e.what());
    return kSandboxFailed;
  }
}

// Deletes each name on its own: one refused for a reason in `said` (not
// there, in use) is said and makes the status 125, and the rest still go.
int delete_each(const std::vector<std::string>& names, const std::function<void(const std::string&)>& remove,
                std::initializer_list<mayura::Reason> said) {
  int status = 0;
  for (const auto& name : names) {
    try {
      remove(name);
      std::printf("deleted %s\n", name.c_str());
    } catch (const mayura::SandboxError& e) {
      if (std::find(said.begin(), said.end(), e.reason()) == said.end()) throw;
      std::fprintf(stderr, "mayura-run: %s: %s\n", std::string(mayura::reason_name(e.reason())).c_str(), e.what());
      status = kSandboxFailed;
    }
  }
  return status;
}

// mayura-run snapshot list|delete; argv[0] is "snapshot". The snapshots of
// the engine a run would use: a daemon's (through the light client when it
// is on a unix socket), or one in this process.
int snapshot_command(int argc, char** argv) {
  const auto bad = [](const std::string& message) {
    std::fprintf(stderr, "mayura-run: INVALID_INPUT: %s\n(see mayura-run snapshot --help)\n", message.c_str());
    std::exit(kSandboxFailed);
  };
  StoreCommand parsed = parse_store_command(argc, argv, kSnapshotUsage, bad);
  if (parsed.exit >= 0) return parsed.exit;
  const bool local = parsed.local;
  const bool json = parsed.json;
  const std::string& command = parsed.command;
  std::vector<std::string>& words = parsed.words;
  const bool list = command == "list" || command == "ls";
  const bool remove = command == "delete" || command == "rm";
  if (!list && !remove) bad("mayura-run snapshot has no command " + command + " (list or delete)");
  if (list && !words.empty()) bad("snapshot list takes no names");
  if (remove && words.empty()) bad("snapshot delete needs the name of a snapshot");
  if (json && !list) bad("--json is for snapshot list");
  for (const auto& name : words) {
    try {
      mayura::check_snapshot_name(name);
    } catch (const mayura::SandboxError& e) {
      bad(e.what());
    }
  }
  return with_store_engine(local, &mayura::Features::snapshot, "snapshots", [&](const mayura::Sandboxes& sandboxes) {
    if (list) {
      const auto snapshots = sandboxes.snapshots();
      if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& s : snapshots) out.push_back(snapshot_json(s));
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
      std::printf("%-40s %10s %12s  %s\n", "NAME", "DISK", "STORED", "CREATED (UTC)");
      for (const auto& s : snapshots) {
        std::printf("%-40s %6lld MiB %12s  %s\n", s.name.c_str(), static_cast<long long>(s.disk_mib),
                    mebibytes(s.stored_bytes).c_str(), utc_time(s.created_ms).c_str());
      }
      return 0;
    }
    return delete_each(words, [&](const std::string& name) { sandboxes.delete_snapshot(name); },
                       {mayura::Reason::NOT_FOUND});
  });
}

const char* kVolumeUsage = R"(usage: mayura-run volume [--local] COMMAND

  create NAME SIZE_MIB  a new, empty volume of SIZE_MIB mebibytes (16 to
                        16777216), its size its quota; a name taken is
                        refused
  list [--json]         the volumes: each one's name, its size, whether a
                        sandbox uses it now, and when it was made (--json:
                        an array of {name, sizeMiB, createdAt, inUse},
                        createdAt in ms since the Unix epoch)
  delete NAME...        delete volumes, and their files with them (rm is the
                        same); one that is not there, or in use, is said, and
                        the exit status is 125
  --local               the volumes of an engine in this process, never a
                        daemon's

Mount one with `mayura-run --volume NAME:PATH[:ro] -- COMMAND`; one sandbox at
a time uses it. They are the daemon's when runs go through one (each of its
clients has its own), else those of MAYURA_VOLUME_DIR (default
/var/lib/mayura/volumes): the two are not the same volumes.
)";

// mayura-run volume create|list|delete; argv[0] is "volume". The volumes of
// the engine a run would use, as for run_snapshot_command.
int volume_command(int argc, char** argv) {
  const auto bad = [](const std::string& message) {
    std::fprintf(stderr, "mayura-run: INVALID_INPUT: %s\n(see mayura-run volume --help)\n", message.c_str());
    std::exit(kSandboxFailed);
  };
  StoreCommand parsed = parse_store_command(argc, argv, kVolumeUsage, bad);
  if (parsed.exit >= 0) return parsed.exit;
  const bool local = parsed.local;
  const bool json = parsed.json;
  const std::string& command = parsed.command;
  std::vector<std::string>& words = parsed.words;
  const bool make = command == "create";
  const bool list = command == "list" || command == "ls";
  const bool remove = command == "delete" || command == "rm";
  if (!make && !list && !remove) bad("mayura-run volume has no command " + command + " (create, list or delete)");
  if (make && words.size() != 2) bad("volume create takes a name and a size in MiB");
  if (list && !words.empty()) bad("volume list takes no names");
  if (remove && words.empty()) bad("volume delete needs the name of a volume");
  if (json && !list) bad("--json is for volume list");
  std::int64_t size_mib = 0;
  if (make) {
    const std::string& size = words.back();
    const bool digits = !size.empty() && size.size() <= 9 && size.find_first_not_of("0123456789") == std::string::npos;
    if (digits) size_mib = std::stoll(size);
    if (!digits || size_mib < 16 || size_mib > (std::int64_t{1} << 24)) {
      bad("volume create takes a size of 16 to 16777216 MiB, not '" + size + "'");
    }
    words.pop_back();
  }
  for (const auto& name : words) {
    try {
      mayura::check_volume_name(name);
    } catch (const mayura::SandboxError& e) {
      bad(e.what());
    }
  }
  return with_store_engine(local, &mayura::Features::volumes, "volumes", [&](const mayura::Sandboxes& sandboxes) {
    if (make) {
      const mayura::Volume made = sandboxes.create_volume(words.front(), size_mib);
      std::printf("created %s\n", made.name.c_str());
      return 0;
    }
    if (list) {
      const auto volumes = sandboxes.volumes();
      if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& v : volumes) out.push_back(volume_json(v));
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
      std::printf("%-40s %12s  %-6s  %s\n", "NAME", "SIZE", "IN USE", "CREATED (UTC)");
      for (const auto& v : volumes) {
        std::printf("%-40s %8lld MiB  %-6s  %s\n", v.name.c_str(), static_cast<long long>(v.size_mib),
                    v.in_use ? "yes" : "no", utc_time(v.created_ms).c_str());
      }
      return 0;
    }
    return delete_each(words, [&](const std::string& name) { sandboxes.delete_volume(name); },
                       {mayura::Reason::NOT_FOUND, mayura::Reason::INVALID_INPUT});
  });
}

}  // namespace

int run_snapshot_command(int argc, char** argv) { return snapshot_command(argc, argv); }
int run_volume_command(int argc, char** argv) { return volume_command(argc, argv); }

}  // namespace mayura::tools
