// The JSON bodies mayurad takes from its clients (service/wire.hpp): a
// create, an exec request, a network, a desktop input, a background
// command's start, input and terminal size, and an attachment's controls;
// and those the remote provider
// takes back from a mayurad (results, entries, features, errors, commands,
// output slices).
// Properties: anything malformed is SandboxError(INVALID_INPUT); what
// parses, written out again, parses to the same JSON.
// Input: one byte choosing the shape, then the body.

#include "fuzz.hpp"
#include "mayura/errors.hpp"
#include "wire.hpp"

namespace service = mayura::service;
using service::json;

namespace {

template <typename Parse, typename Write>
void round_trip(const json& body, Parse parse, Write write) {
  json once;
  try {
    once = write(parse(body));
    mayura::fuzz::accept();
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT);
    return;
  }
  const json twice = write(parse(once));
  FUZZ_CHECK(twice == once);
  (void)service::dump(once);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  json body;
  try {
    body = service::parse_body(mayura::fuzz::bytes(data + 1, size - 1), "the request");
  } catch (const mayura::SandboxError& e) {
    FUZZ_CHECK(e.reason() == mayura::Reason::INVALID_INPUT);
    return 0;
  }
  switch (data[0] % 13) {
    case 0: round_trip(body, service::create_from, service::create_json); break;
    case 1:
      round_trip(body, service::exec_request_from,
                 [](const service::ExecRequest& r) { return service::exec_request_json(r.argv, r.options); });
      break;
    case 2: round_trip(body, service::network_from, service::network_json); break;
    case 3: round_trip(body, service::features_from, service::features_json); break;
    case 4: round_trip(body, service::exec_result_from, service::exec_result_json); break;
    case 5: round_trip(body, service::file_entry_from, service::file_entry_json); break;
    case 6: round_trip(body, service::desktop_input_from, service::desktop_input_json); break;
    case 7:
      round_trip(body, service::start_request_from,
                 [](const service::StartRequest& r) { return service::start_request_json(r.argv, r.options); });
      break;
    case 8: round_trip(body, service::command_info_from, service::command_info_json); break;
    case 9: round_trip(body, service::output_slice_from, service::output_slice_json); break;
    case 10: round_trip(body, service::terminal_size_from, service::terminal_size_json); break;
    case 11: round_trip(body, service::command_input_from, service::command_input_json); break;
    default: round_trip(body, service::attach_control_from, service::attach_control_json); break;
  }
  return 0;
}
