#pragma once
// The HTTP/1.1 request head the admin endpoints accept: a request line and headers, nothing
// more (no body, no keep-alive: one request per connection). Strict and bounded: anything
// unexpected is a 4xx, never a guess.
#include <cstddef>
#include <string>
#include <string_view>

namespace corvid::admin {

// A request line and headers longer than this get 431 and a close.
inline constexpr std::size_t max_request_head = 8 * 1024;

struct http_request {
  std::string_view method;  // "GET" or "HEAD"
  std::string_view path;    // the target without its query
  std::string_view query;   // after '?', or empty
  bool wants_json = false;  // an Accept header naming application/json
  // The Authorization header's value without surrounding blanks (admin_auth.hpp); empty
  // when absent. A request with two is refused 400 (which one counts would be a guess).
  std::string_view authorization;
};

enum class parse_status {
  incomplete,  // no blank line yet, within max_request_head: read more
  complete,    // `request` is filled in (its views point into the input)
  bad,         // answer `error_status` and close
};

struct parse_result {
  parse_status status = parse_status::incomplete;
  int error_status = 0;     // 400, 405, 414, 431 or 505 when bad
  std::string_view reason;  // why, for the error body
};

// Parses the head at the start of `input` (what has arrived so far).
parse_result parse_http_request(std::string_view input, http_request& request);

}  // namespace corvid::admin
