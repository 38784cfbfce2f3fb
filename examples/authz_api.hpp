#pragma once
// The functions the authorization example's two processes share. The server defines them
// (authz_server.cpp); the client only names them in call<...>, so a declaration is all it
// needs. A leading request_context& is the server's view of the call: it does not travel.
#include <string>

namespace corvid {
class request_context;
}

// Who the server says the caller is: for the workloads on the server's SPIFFE-id allowlist.
std::string whoami(corvid::request_context& ctx);
// A report by name: for callers that present the bearer token.
std::string read_report(corvid::request_context& ctx, std::string name);
