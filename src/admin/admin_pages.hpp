#pragma once
// What the admin endpoints answer: GET /metrics, /status, /connections, /health.
#include <string>
#include <string_view>

#include "corvid/server/server_config.hpp"

#include "../metrics/snapshot.hpp"
#include "http_request.hpp"

namespace corvid::admin {

struct http_response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // A 401's challenge ("Bearer"): sent as WWW-Authenticate when not empty.
  std::string www_authenticate;
};

// Whether `path` needs a server snapshot (everything but /health and unknown paths).
bool needs_snapshot(std::string_view path) noexcept;
http_response route(const http_request& request, const metrics::server_snapshot& snapshot,
                    const server_config& config);
http_response error_response(int status, std::string_view reason);
// Status line, headers (Connection: close, Content-Length) and, unless HEAD, the body.
std::string serialize(const http_response& r, bool head_only);

std::string status_page(const metrics::server_snapshot& s, const server_config& config);
std::string connections_text(const metrics::server_snapshot& s);
std::string connections_json(const metrics::server_snapshot& s);

}  // namespace corvid::admin
