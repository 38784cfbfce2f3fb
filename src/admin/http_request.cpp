#include "http_request.hpp"

#include <algorithm>

namespace corvid::admin {
namespace {

parse_result bad(int status, std::string_view reason) {
  return {parse_status::bad, status, reason};
}

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 32 || u >= 127) return false;
  return std::string_view("()<>@,;:\\\"/[]?={}").find(c) == std::string_view::npos;
}

// Visible ASCII, space and tab (obs-text, bytes >= 0x80, is allowed in values).
bool is_value_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == '\t' || (u >= 32 && u != 127);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

}  // namespace

parse_result parse_http_request(std::string_view input, http_request& request) {
  const std::size_t end = input.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    // Bare LF line ends are not HTTP/1.1; said at once rather than after 8 KiB.
    const std::size_t lf = input.find('\n');
    if (lf != std::string_view::npos && (lf == 0 || input[lf - 1] != '\r')) {
      return bad(400, "lines must end with CRLF");
    }
    if (input.size() > max_request_head) return bad(431, "request head over 8 KiB");
    return {};
  }
  if (end + 4 > max_request_head) return bad(431, "request head over 8 KiB");
  std::string_view head = input.substr(0, end + 2);  // every line with its CRLF

  const std::size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  head.remove_prefix(line_end + 2);
  const std::size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return bad(400, "malformed request line");
  const std::string_view method = line.substr(0, sp1);
  if (!std::all_of(method.begin(), method.end(), is_token_char)) {
    return bad(400, "malformed method");
  }
  const std::size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return bad(400, "malformed request line");
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return version.starts_with("HTTP/") ? bad(505, "only HTTP/1.0 and HTTP/1.1")
                                        : bad(400, "malformed request line");
  }
  if (target.empty() || target[0] != '/') return bad(400, "target must be an absolute path");
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 32 || u >= 127) return bad(400, "malformed target");
  }
  if (target.size() > 2048) return bad(414, "target too long");

  bool json = false;
  std::string_view authorization;
  bool has_authorization = false;
  while (!head.empty()) {
    const std::size_t e = head.find("\r\n");
    const std::string_view h = head.substr(0, e);
    head.remove_prefix(e + 2);
    const std::size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad(400, "malformed header");
    const std::string_view name = h.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) {
      return bad(400, "malformed header name");  // also a folded line (leading space)
    }
    std::string_view value = h.substr(colon + 1);
    if (!std::all_of(value.begin(), value.end(), is_value_char)) {
      return bad(400, "control character in a header");
    }
    if ((iequals(name, "content-length") && value.find_first_not_of(" \t0") != value.npos) ||
        iequals(name, "transfer-encoding")) {
      return bad(400, "the admin endpoints take no request body");
    }
    if (iequals(name, "accept") && value.find("application/json") != value.npos) json = true;
    if (iequals(name, "authorization")) {
      if (has_authorization) return bad(400, "more than one Authorization header");
      has_authorization = true;
      const std::size_t b = value.find_first_not_of(" \t");
      authorization = b == value.npos ? std::string_view{}
                                      : value.substr(b, value.find_last_not_of(" \t") + 1 - b);
    }
  }
  if (method != "GET" && method != "HEAD") return bad(405, "only GET and HEAD");

  const std::size_t q = target.find('?');
  request.method = method;
  request.path = target.substr(0, q);
  request.query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  request.wants_json = json;
  request.authorization = authorization;
  return {parse_status::complete, 0, {}};
}

}  // namespace corvid::admin
