// The engine's own wire format (engine/protocol.hpp): what the in-sandbox
// init and helpers read from the engine, and the listings they send back,
// which a sandbox's processes may forge. Properties: decoding never reads
// past the bytes; what decodes re-encodes, and that encoding decodes to the
// same encoding again.
// Input: one byte choosing the message, then the message.

#include "fuzz.hpp"
#include "protocol.hpp"

namespace protocol = mayura::protocol;

namespace {

template <typename Message>
void round_trip(const std::string& bytes) {
  Message m;
  if (!protocol::decode(bytes, m)) return;
  mayura::fuzz::accept();
  const std::string once = protocol::encode(m);
  Message again;
  FUZZ_CHECK(protocol::decode(once, again));
  FUZZ_CHECK(protocol::encode(again) == once);
}

void file_round_trip(const std::string& bytes) {
  protocol::FileRequest f;
  if (!protocol::decode(bytes, f)) return;
  mayura::fuzz::accept();
  const protocol::Request kind = protocol::kind_of(bytes);
  const std::string once = protocol::encode(kind, f);
  protocol::FileRequest again;
  FUZZ_CHECK(protocol::decode(once, again));
  FUZZ_CHECK(protocol::encode(kind, again) == once);
}

void listing_round_trip(const std::string& bytes) {
  std::vector<protocol::ListEntry> entries;
  if (!protocol::decode_listing(bytes, entries)) return;
  mayura::fuzz::accept();
  std::string once;
  for (const auto& e : entries) once += protocol::encode(e);
  std::vector<protocol::ListEntry> again;
  FUZZ_CHECK(protocol::decode_listing(once, again));
  FUZZ_CHECK(again.size() == entries.size());
  std::string twice;
  for (const auto& e : again) twice += protocol::encode(e);
  FUZZ_CHECK(twice == once);
}

void standby_round_trip(const std::string& bytes) {
  bool now = false;
  if (!protocol::decode_standby(bytes, now)) return;
  mayura::fuzz::accept();
  FUZZ_CHECK(protocol::encode_standby(now) == bytes);
}

// The requests of a sandbox that outlives its engine, and of a signal.
void keep_and_signal_round_trip(const std::string& bytes) {
  std::int64_t deadline_ms = 0;
  if (protocol::decode_keep(bytes, deadline_ms)) {
    mayura::fuzz::accept();
    FUZZ_CHECK(deadline_ms >= 0 && protocol::encode_keep(deadline_ms) == bytes);
  }
  std::int32_t pid = 0;
  std::int32_t signal = 0;
  if (protocol::decode_signal(bytes, pid, signal)) {
    mayura::fuzz::accept();
    FUZZ_CHECK(pid > 1 && signal > 0 && signal < 65 && protocol::encode_signal(pid, signal) == bytes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: round_trip<protocol::Config>(bytes); break;
    case 1: round_trip<protocol::Exec>(bytes); break;
    case 2: file_round_trip(bytes); break;
    case 4: standby_round_trip(bytes); break;
    case 5: keep_and_signal_round_trip(bytes); break;
    default: listing_round_trip(bytes); break;
  }
  (void)protocol::kind_of(bytes);
  return 0;
}
