#pragma once
// The API a client and a server program share in the role-header tests: a header both
// processes would include, so it pulls only the shared API's own headers (no client or server
// header), and each role's test adds its own entry header beside it.
#include <cstddef>
#include <string>
#include <string_view>

#include <corvid/stream/stream.hpp>
#include <corvid/task.hpp>

namespace corvid_test::role_api {

inline std::string_view echo(std::string_view s) { return s; }
inline corvid::task<int> add(int a, int b) { co_return a + b; }
inline corvid::stream<int> count_to(int n) {
  for (int i = 1; i <= n; ++i) co_yield i;
}
inline corvid::task<std::size_t> upload(corvid::stream_reader<std::string> in) {
  std::size_t total = 0;
  while (auto chunk = co_await in.next()) total += chunk->size();
  co_return total;
}
inline corvid::stream<std::string> chat(corvid::stream_reader<std::string> in) {
  while (auto m = co_await in.next()) co_yield *m;
}

}  // namespace corvid_test::role_api
