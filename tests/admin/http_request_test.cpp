// The admin side's HTTP request parser: strict, bounded, never a guess.
#include "admin/http_request.hpp"

#include <string>

#include <gtest/gtest.h>

namespace corvid::admin {
namespace {

parse_result parse(std::string_view in, http_request& r) { return parse_http_request(in, r); }

TEST(http_request, get_with_query_and_headers) {
  http_request r;
  const auto res =
      parse("GET /connections?format=json HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", r);
  ASSERT_EQ(res.status, parse_status::complete);
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/connections");
  EXPECT_EQ(r.query, "format=json");
  EXPECT_FALSE(r.wants_json);
  ASSERT_EQ(parse("HEAD /health HTTP/1.0\r\nAccept: application/json\r\n\r\n", r).status,
            parse_status::complete);
  EXPECT_EQ(r.method, "HEAD");
  EXPECT_TRUE(r.wants_json);
}

TEST(http_request, incomplete_until_the_blank_line) {
  http_request r;
  EXPECT_EQ(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n", r).status, parse_status::incomplete);
  EXPECT_EQ(parse("GET", r).status, parse_status::incomplete);
}

TEST(http_request, bad_requests_get_their_status) {
  http_request r;
  auto status = [&](std::string_view in) {
    const auto res = parse(in, r);
    return res.status == parse_status::bad ? res.error_status : 0;
  };
  EXPECT_EQ(status("POST /metrics HTTP/1.1\r\n\r\n"), 405);
  EXPECT_EQ(status("GET /metrics HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(status("GET /metrics FOO\r\n\r\n"), 400);
  EXPECT_EQ(status("GET metrics HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET  /metrics HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\nHost: x\n\n"), 400);  // bare LF
  EXPECT_EQ(status("GET /m\x01 HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\n folded: x\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\nX: a\x7f\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /" + std::string(3000, 'a') + " HTTP/1.1\r\n\r\n"), 414);
}

TEST(http_request, head_over_8_kib_is_refused_before_it_ends) {
  http_request r;
  const std::string big = "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a');
  const auto res = parse(big, r);
  ASSERT_EQ(res.status, parse_status::bad);
  EXPECT_EQ(res.error_status, 431);
  EXPECT_EQ(parse(big + "\r\n\r\n", r).error_status, 431);
}

}  // namespace
}  // namespace corvid::admin
