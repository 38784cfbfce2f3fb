#pragma once
// The functions both example processes share: the server registers them, the client names
// them in call<...>. Their signatures are the whole schema. Only what the signatures use is
// included here; each process adds its role's header (corvid/client.hpp, corvid/server.hpp).
#include <string>
#include <string_view>
#include <vector>

#include <corvid/task.hpp>

inline std::string_view echo(std::string_view s) { return s; }

inline corvid::task<int> add(int a, int b) { co_return a + b; }

struct point {
  int x;
  double y;
  std::string tag;
  std::vector<int> v;
};
inline point move(point p, int dx) {
  p.x += dx;
  p.v.push_back(dx);
  return p;
}
