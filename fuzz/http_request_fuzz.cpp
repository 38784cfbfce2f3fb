// Fuzzes the admin side's HTTP request parser (src/admin/http_request.cpp), the first code to
// read the bytes of a connection that starts with 'G' or 'H' when server_config::http_admin
// is on. Besides not crashing (ASan, UBSan), it checks what the admin session relies on: a
// bad request has one of the statuses it can answer; a complete one is GET or HEAD with an
// absolute path inside the input, and bytes after the head never change the result; nothing
// longer than the head limit is ever complete.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "admin/http_request.hpp"

namespace {

using namespace corvid::admin;

void check(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input and the stack
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  http_request r;
  const parse_result res = parse_http_request(in, r);
  switch (res.status) {
    case parse_status::incomplete:
      check(in.size() <= max_request_head);
      break;
    case parse_status::bad:
      check(res.error_status == 400 || res.error_status == 405 || res.error_status == 414 ||
            res.error_status == 431 || res.error_status == 505);
      check(!res.reason.empty());
      break;
    case parse_status::complete: {
      check(r.method == "GET" || r.method == "HEAD");
      check(!r.path.empty() && r.path[0] == '/');
      check(inside(r.method, in) && inside(r.path, in) && inside(r.query, in));
      const std::size_t end = in.find("\r\n\r\n");
      check(end != std::string_view::npos && end + 4 <= max_request_head);
      // What follows the head (a body the client should not have sent) changes nothing.
      const std::string more = std::string(in) + "GET / HTTP/1.1\r\n\x01\r\n\r\n";
      http_request again;
      const parse_result res2 = parse_http_request(more, again);
      check(res2.status == parse_status::complete && again.method == r.method &&
            again.path == r.path && again.query == r.query && again.wants_json == r.wants_json);
      break;
    }
  }
  return 0;
}
