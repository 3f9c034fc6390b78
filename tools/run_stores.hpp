#pragma once
// mayura-run's stores: `mayura-run snapshot ...` and `mayura-run volume
// ...`, on the engine a run would use; and how a snapshot and a volume are
// printed as JSON (as mayurad's API writes them).

#include <nlohmann/json.hpp>

#include "mayura/sandbox.hpp"

namespace mayura::tools {

int run_snapshot_command(int argc, char** argv);
int run_volume_command(int argc, char** argv);

nlohmann::json snapshot_json(const Snapshot& s);
nlohmann::json volume_json(const Volume& v);

}  // namespace mayura::tools
