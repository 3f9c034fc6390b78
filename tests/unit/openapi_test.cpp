// The HTTP API's OpenAPI document (docs/openapi.json) against the server
// itself: its paths and methods are the route table's, no more and no less;
// every reference in it resolves; and each JSON shape it describes is the
// one the wire reads and writes (a body with every property the document
// lists is taken, and what the server writes has only properties it lists).

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "mayura/errors.hpp"
#include "mayura/validate.hpp"
#include "service/route_table.hpp"
#include "tests/support/reason_of.hpp"
#include "service/wire.hpp"

namespace mayura::service {
namespace {

const json& document() {
  static const json doc = [] {
    std::ifstream in(MAYURA_OPENAPI_PATH);
    return json::parse(in);
  }();
  return doc;
}

const json& schema(const std::string& name) { return document().at("components").at("schemas").at(name); }

std::set<std::string> property_names(const std::string& name) {
  std::set<std::string> names;
  for (const auto& [key, value] : schema(name).at("properties").items()) names.insert(key);
  return names;
}

std::set<std::string> keys_of(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

// A path with every parameter called {id}: the table calls a sandbox's,
// snapshot's or volume's {id} and a command's {command}, the document names
// each for what it is ({name}).
std::string route_path(std::string path) {
  for (std::size_t open = path.find('{'); open != std::string::npos; open = path.find('{', open + 1)) {
    const std::size_t close = path.find('}', open);
    if (close == std::string::npos) break;
    path.replace(open, close - open + 1, "{id}");
  }
  return path;
}

TEST(OpenApi, IsAnOpenApi31DocumentOfEveryRouteAndNoOther) {
  EXPECT_EQ(document().at("openapi"), "3.1.0");
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, operations] : document().at("paths").items()) {
    for (const auto& [method, operation] : operations.items()) {
      documented.emplace(method, route_path(path));
      EXPECT_TRUE(operation.contains("operationId") && operation.contains("responses")) << method << " " << path;
      // Each parameter of the path is described, and only those.
      std::set<std::string> in_path;
      for (const json& p : operation.value("parameters", json::array())) {
        if (p.at("in") == "path") in_path.insert("{" + p.at("name").get<std::string>() + "}");
      }
      std::set<std::string> named;
      for (std::size_t open = path.find('{'); open != std::string::npos; open = path.find('{', open + 1)) {
        named.insert(path.substr(open, path.find('}', open) - open + 1));
      }
      EXPECT_EQ(in_path, named) << method << " " << path;
    }
  }
  std::set<std::pair<std::string, std::string>> served;
  for (const Route& r : route_table()) {
    std::string method(boost::beast::http::to_string(r.method));
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    served.emplace(method, route_path(std::string(r.path)));
  }
  EXPECT_EQ(documented, served);
}

TEST(OpenApi, EveryReferenceResolves) {
  std::function<void(const json&)> walk = [&](const json& node) {
    if (node.is_object()) {
      if (const auto ref = node.find("$ref"); ref != node.end()) {
        const std::string target = *ref;
        const std::string prefix = "#/components/schemas/";
        ASSERT_EQ(target.rfind(prefix, 0), 0u) << target;
        EXPECT_TRUE(document().at("components").at("schemas").contains(target.substr(prefix.size()))) << target;
      }
      for (const auto& [key, value] : node.items()) walk(value);
    } else if (node.is_array()) {
      for (const auto& value : node) walk(value);
    }
  };
  walk(document());
}

// A create with every property the document lists, each at a value its
// schema allows, is taken; the server's own writing of a full create lists
// no property the document lacks.
TEST(OpenApi, TheCreateBodyIsTheWiresOwn) {
  const json full = {{"lifetimeMs", 1000},
                     {"network", {{"allow", {"example.com"}}}},
                     {"env", {{"A", "1"}}},
                     {"ports", {8080}},
                     {"cpus", 1.5},
                     {"memoryMiB", 256},
                     {"diskMiB", 64},
                     {"snapshot", "base-1.0_x"},
                     {"writableRoot", true},
                     {"volumes", {{{"name", "data"}, {"path", "/data"}, {"readOnly", true}}}},
                     {"diskIo", {{"readBps", 1 << 20}, {"writeBps", 2 << 20}, {"readIops", 100}, {"writeIops", 50}}},
                     {"pids", 64},
                     {"seccompProfile", "{}"},
                     {"image", "host"},
                     {"labels", {{"k", "v"}}},
                     {"user", "sandbox"},
                     {"workdir", "/work"},
                     {"desktop", {{"width", 800}, {"height", 600}}}};
  EXPECT_EQ(keys_of(full), property_names("CreateRequest"));
  const CreateOptions taken = create_from(full);
  EXPECT_EQ(keys_of(create_json(taken)), property_names("CreateRequest"));
  for (const auto& required : schema("CreateRequest").at("required")) EXPECT_TRUE(full.contains(required));
  // A volume's mount, both ways.
  EXPECT_EQ(keys_of(full.at("volumes").at(0)), property_names("VolumeMount"));
  ASSERT_EQ(taken.volumes.size(), 1u);
  EXPECT_EQ(taken.volumes[0].name, "data");
  EXPECT_EQ(taken.volumes[0].path, "/data");
  EXPECT_TRUE(taken.volumes[0].read_only);
  EXPECT_EQ(keys_of(create_json(taken).at("volumes").at(0)), property_names("VolumeMount"));
  EXPECT_TRUE(taken.writable_root);
  EXPECT_FALSE(create_json(create_from({{"lifetimeMs", 1}})).contains("writableRoot"));
  // The disk's I/O bounds, both ways, each in its own field.
  EXPECT_EQ(keys_of(full.at("diskIo")), property_names("DiskIo"));
  ASSERT_TRUE(taken.disk_io);
  EXPECT_EQ(*taken.disk_io, (DiskIo{1 << 20, 2 << 20, 100, 50}));
  EXPECT_EQ(create_json(taken).at("diskIo"), full.at("diskIo"));
  EXPECT_THROW(create_from({{"lifetimeMs", 1}, {"diskIo", {{"readBps", -1}}}}), SandboxError);
  EXPECT_THROW(create_from({{"lifetimeMs", 1}, {"diskIo", {{"bps", 1}}}}), SandboxError) << "a key it does not have";
  EXPECT_EQ(schema("VolumeMount").at("required"), json::array({"name", "path"}));
  EXPECT_FALSE(create_from({{"lifetimeMs", 1}, {"volumes", {{{"name", "a"}, {"path", "/a"}}}}}).volumes[0].read_only);
  EXPECT_EQ(schema("CreateRequest").at("properties").at("volumes").at("maxItems"), 16);
  json seventeen = {{"lifetimeMs", 1}, {"volumes", json::array()}};
  for (int i = 0; i < 17; ++i) seventeen["volumes"].push_back({{"name", "v" + std::to_string(i)}, {"path", "/v"}});
  EXPECT_THROW(create_from(seventeen), SandboxError);
  EXPECT_THROW(create_from({{"lifetimeMs", 1}, {"volumes", {{{"name", "a"}}}}}), SandboxError) << "no path";
  EXPECT_THROW(create_from({{"lifetimeMs", 1}, {"volumes", {{{"name", "a"}, {"path", "/a"}, {"size", 1}}}}}),
               SandboxError)
      << "a key the mount does not have";
}

TEST(OpenApi, TheExecShapesAreTheWiresOwn) {
  const json full = {
      {"argv", {"sh", "-c", "true"}}, {"cwd", "/work"}, {"env", {{"A", "1"}}}, {"timeoutMs", 1000}, {"stdin", "input"},
      {"maxOutputBytes", 1024}};
  EXPECT_EQ(keys_of(full), property_names("ExecRequest"));
  const ExecRequest taken = exec_request_from(full);
  EXPECT_EQ(keys_of(exec_request_json(taken.argv, taken.options)), property_names("ExecRequest"));
  // The end line is the result without the output the lines before carried.
  json end = exec_result_json(ExecResult{});
  end.erase("stdout");
  end.erase("stderr");
  EXPECT_EQ(keys_of(end), property_names("ExecEnd"));
  EXPECT_EQ(property_names("RunRequest"), (std::set<std::string>{"sandbox", "exec"}));
}

// A background command's shapes, both ways: the start request, the
// command, the slice of its output, its input and its terminal's size.
TEST(OpenApi, TheCommandShapesAreTheWiresOwn) {
  const json full = {{"argv", {"sh", "-c", "true"}},
                     {"cwd", "/work"},
                     {"env", {{"A", "1"}}},
                     {"timeoutMs", 1000},
                     {"stdin", "input"},
                     {"terminal", {{"rows", 24}, {"columns", 80}}},
                     {"keepBytes", 4096}};
  EXPECT_EQ(keys_of(full), property_names("StartRequest"));
  const StartRequest taken = start_request_from(full);
  EXPECT_EQ(keys_of(start_request_json(taken.argv, taken.options)), property_names("StartRequest"));
  CommandInfo info;
  info.error = "its sandbox ended";
  const json command = command_info_json(info);
  EXPECT_EQ(keys_of(command), property_names("Command"));
  EXPECT_EQ(keys_of(command_info_json(command_info_from(command))), property_names("Command"));
  std::set<std::string> states;
  for (CommandState state : {CommandState::running, CommandState::exited, CommandState::timed_out,
                             CommandState::stopped, CommandState::failed}) {
    info.state = state;
    states.insert(command_info_json(info).at("state").get<std::string>());
  }
  const json& listed = schema("Command").at("properties").at("state").at("enum");
  EXPECT_EQ(states, (std::set<std::string>(listed.begin(), listed.end())));
  EXPECT_EQ(keys_of(output_slice_json(OutputSlice{})), property_names("OutputSlice"));
  EXPECT_EQ(keys_of(command_input_json(CommandInput{"data", true})), property_names("CommandInput"));
  EXPECT_EQ(keys_of(terminal_size_json(TerminalSize{})), property_names("TerminalSize"));
}

// An attachment's controls, both ways, and what each refuses.
TEST(OpenApi, TheAttachmentsControlsRoundTripAndBadOnesAreRefused) {
  using K = AttachControl::Kind;
  for (const json& message : {json{{"closeInput", true}}, json{{"signal", 2}}, json{{"stop", true}},
                              json{{"resize", {{"rows", 40}, {"columns", 120}}}}}) {
    EXPECT_EQ(attach_control_json(attach_control_from(message)), message) << message;
  }
  const AttachControl resize = attach_control_from({{"resize", {{"rows", 40}, {"columns", 120}}}});
  EXPECT_EQ(resize.kind, K::resize);
  EXPECT_EQ(resize.size.rows, 40);
  EXPECT_EQ(attach_control_from({{"signal", 64}}).signal, 64);
  for (const json& bad :
       {json::array(), json::object(), json{{"signal", 0}}, json{{"signal", 65}}, json{{"signal", "INT"}},
        json{{"closeInput", false}}, json{{"stop", 1}}, json{{"resize", {{"rows", 1}}}}, json{{"shout", true}},
        json{{"signal", 2}, {"stop", true}}}) {
    EXPECT_EQ(testing::reason_of([&] { attach_control_from(bad); }), Reason::INVALID_INPUT) << bad;
  }
}

// What a snapshot is on the wire, both ways; the bodies a snapshot and a
// fork take (the routes read them: {"name"}, and {"count", "lifetimeMs"?}).
TEST(OpenApi, TheSnapshotShapesAreTheWiresOwn) {
  const json written = snapshot_json(Snapshot{});
  EXPECT_EQ(keys_of(written), property_names("Snapshot"));
  for (const auto& required : schema("Snapshot").at("required")) EXPECT_TRUE(written.contains(required));
  const json full = {{"name", "base"}, {"diskMiB", 64}, {"storedBytes", 4096}, {"createdAt", 1}};
  EXPECT_EQ(keys_of(full), property_names("Snapshot"));
  const Snapshot read = snapshot_from(full);
  EXPECT_EQ(read.name, "base");
  EXPECT_EQ(read.disk_mib, 64);
  EXPECT_EQ(read.stored_bytes, 4096);
  EXPECT_EQ(read.created_ms, 1);
  EXPECT_EQ(property_names("SnapshotList"), (std::set<std::string>{"snapshots"}));
  EXPECT_EQ(property_names("SnapshotRequest"), (std::set<std::string>{"name"}));
  EXPECT_EQ(property_names("ForkRequest"), (std::set<std::string>{"count", "lifetimeMs"}));
  EXPECT_EQ(schema("ForkRequest").at("required"), json::array({"count"}));
  EXPECT_EQ(schema("ForkRequest").at("properties").at("count").at("minimum"), 1);
  EXPECT_EQ(schema("ForkRequest").at("properties").at("count").at("maximum"), 64);
  // The create's snapshot and every snapshot's name: the names the
  // contract takes (check_snapshot_name).
  EXPECT_EQ(schema("CreateRequest").at("properties").at("snapshot").at("allOf").at(0).at("$ref"),
            "#/components/schemas/SnapshotName");
  const std::regex pattern(schema("SnapshotName").at("pattern").get<std::string>());
  for (const std::string& name :
       std::vector<std::string>{"a", "base-1.0_x", "9", std::string(64, 'z'), "", std::string(65, 'z'), "-a", ".a",
                                "_a", "~fork-1", "a/b", "a b", "..", "é"}) {
    bool taken = true;
    try {
      check_snapshot_name(name);
    } catch (const SandboxError&) {
      taken = false;
    }
    EXPECT_EQ(std::regex_search(name, pattern), taken) << name;
  }
}

// What a volume is on the wire, both ways; the body a volume's create takes
// (the route reads it: {"name", "sizeMiB"}); and its names, the contract's.
TEST(OpenApi, TheVolumeShapesAreTheWiresOwn) {
  const json written = volume_json(Volume{});
  EXPECT_EQ(keys_of(written), property_names("Volume"));
  for (const auto& required : schema("Volume").at("required")) EXPECT_TRUE(written.contains(required));
  const json full = {{"name", "data"}, {"sizeMiB", 64}, {"createdAt", 1}, {"inUse", true}};
  EXPECT_EQ(keys_of(full), property_names("Volume"));
  const Volume read = volume_from(full);
  EXPECT_EQ(read.name, "data");
  EXPECT_EQ(read.size_mib, 64);
  EXPECT_EQ(read.created_ms, 1);
  EXPECT_TRUE(read.in_use);
  EXPECT_EQ(property_names("VolumeList"), (std::set<std::string>{"volumes"}));
  EXPECT_EQ(property_names("VolumeRequest"), (std::set<std::string>{"name", "sizeMiB"}));
  EXPECT_EQ(schema("VolumeRequest").at("required"), json::array({"name", "sizeMiB"}));
  const json& size = schema("VolumeRequest").at("properties").at("sizeMiB");
  EXPECT_EQ(size.at("minimum"), 16);
  EXPECT_EQ(size.at("maximum"), std::int64_t{1} << 24);
  EXPECT_EQ(schema("VolumeMount").at("properties").at("name").at("allOf").at(0).at("$ref"),
            "#/components/schemas/VolumeName");
  const std::regex pattern(schema("VolumeName").at("pattern").get<std::string>());
  for (const std::string& name :
       std::vector<std::string>{"a", "data-1.0_x", "9", std::string(64, 'z'), "", std::string(65, 'z'), "-a", ".a",
                                "_a", "~v", "a/b", "a b", "..", "é"}) {
    bool taken = true;
    try {
      check_volume_name(name);
    } catch (const SandboxError&) {
      taken = false;
    }
    EXPECT_EQ(std::regex_search(name, pattern), taken) << name;
  }
}

TEST(OpenApi, TheOtherShapesAreTheWiresOwn) {
  Features f;
  f.network = {NetworkKind::none, NetworkKind::all, NetworkKind::allowlist};
  const json features = features_json(f);
  EXPECT_EQ(keys_of(features), property_names("Features"));
  std::set<std::string> kinds;
  for (const json& k : features.at("network")) kinds.insert(k);
  EXPECT_EQ(kinds,
            (std::set<std::string>(schema("NetworkKind").at("enum").begin(), schema("NetworkKind").at("enum").end())));
  EXPECT_EQ(keys_of(file_entry_json(FileEntry{})), property_names("FileEntry"));
  EXPECT_EQ(keys_of(desktop_size_json(DesktopSize{})), property_names("DesktopSize"));
  EXPECT_EQ(keys_of(error_json(Reason::INTERNAL, "x")), property_names("Error"));
  std::set<std::string> reasons;
  for (Reason r :
       {Reason::INVALID_INPUT, Reason::INVALID_CONFIG, Reason::PERMISSION_DENIED, Reason::GONE, Reason::CANCELLED,
        Reason::LIMIT_REACHED, Reason::NOT_FOUND, Reason::UNSUPPORTED, Reason::INTERNAL}) {
    reasons.insert(std::string(reason_name(r)));
  }
  const json& listed = schema("Error").at("properties").at("reason").at("enum");
  EXPECT_EQ(reasons, (std::set<std::string>(listed.begin(), listed.end())));
  // Every input action's properties, each taken by the wire in some action.
  std::set<std::string> written;
  for (const json& action :
       {json{{"action", "click"}, {"at", {{"x", 1}, {"y", 2}}}, {"button", "right"}, {"count", 2}},
        json{{"action", "drag"}, {"path", {{{"x", 1}, {"y", 2}}, {{"x", 3}, {"y", 4}}}}},
        json{{"action", "scroll"}, {"at", {{"x", 1}, {"y", 2}}}, {"direction", "up"}, {"amount", 3}},
        json{{"action", "type"}, {"text", "hello"}}}) {
    for (const auto& key : keys_of(desktop_input_json(desktop_input_from(action)))) written.insert(key);
  }
  EXPECT_EQ(written, property_names("DesktopInput"));
}

}  // namespace
}  // namespace mayura::service
