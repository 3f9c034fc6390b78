#pragma once
// Execs and runs, streamed to their client as NDJSON while the command
// runs: each output chunk a line as it comes (the command waits while its
// client is slow), then the result; a client that goes away stops the
// command. And a client's turn on the blocking pool, which a run's create
// and release (and other blocking calls) wait for.

#include <optional>
#include <string>

#include "server_state.hpp"

namespace mayura::service {

// POST /v1/sandboxes/{id}/exec, answered; false if the connection is done.
template <class Stream>
awaitable<bool> serve_exec(Stream& stream, State& s, const Request& req, const std::string& id, const Client& client);

// POST /v1/run (create, exec, release), answered; false if the connection
// is done.
template <class Stream>
awaitable<bool> serve_run(Stream& stream, State& s, const Request& req, const Client& client);

// A client's turn on the blocking pool, waited for without a thread, up to
// the body timeout: one client's slow calls then hold its own share of the
// pool, never the threads other clients' calls need. False when the wait
// was too long. (Arguments by reference: the caller's frame outlives this.)
awaitable<bool> blocking_turn(State& s, const Client& client, std::optional<PerClient::Lease>& turn);

// The answer when blocking_turn waited too long.
Reply blocking_share_spent();

}  // namespace mayura::service
