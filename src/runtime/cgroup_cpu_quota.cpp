#include "cgroup_cpu_quota.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace corvid::detail {
namespace {

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// A whole decimal integer, or false.
bool to_int(std::string_view s, long long& out) {
  s = trim(s);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return {};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t next = s.find(sep, at);
    out.push_back(
        s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo (octal).
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A mounted cgroup hierarchy: where it is mounted and which cgroup its root is.
struct mount {
  std::string point;  // e.g. /sys/fs/cgroup/cpu,cpuacct
  std::string root;   // "/" on a host; the container's cgroup when only that part is mounted
};

// The cgroup v1 hierarchy holding the `cpu` controller (v2 = false), or the v2 one.
bool find_mount(std::string_view mountinfo, bool v2, mount& out) {
  for (std::string_view line : split(mountinfo, '\n')) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const auto left = split(line.substr(0, dash), ' ');
    const auto right = split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    if (v2) {
      if (right[0] != "cgroup2") continue;
    } else {
      const auto opts = split(right[2], ',');
      if (right[0] != "cgroup" || std::find(opts.begin(), opts.end(), "cpu") == opts.end())
        continue;
    }
    out.root = unescape(left[3]);
    out.point = unescape(left[4]);
    return true;
  }
  return false;
}

// The process's cgroup path in the v1 hierarchy with the `cpu` controller, or in v2.
bool find_cgroup(std::string_view proc_cgroup, bool v2, std::string& out) {
  for (std::string_view line : split(proc_cgroup, '\n')) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(a + 1, b - a - 1);
    const auto list = split(controllers, ',');
    const bool match = v2 ? (line.substr(0, a) == "0" && controllers.empty())
                          : std::find(list.begin(), list.end(), "cpu") != list.end();
    if (match) {
      out = std::string(line.substr(b + 1));
      return true;
    }
  }
  return false;
}

double quota_at(const fs::path& dir, bool v2) {
  if (v2) return parse_cpu_max(read_file(dir / "cpu.max"));
  return parse_cfs_quota(read_file(dir / "cpu.cfs_quota_us"), read_file(dir / "cpu.cfs_period_us"));
}

// The lowest quota from the process's cgroup up to the mount's top; 0 = none.
double hierarchy_quota(const fs::path& root, std::string_view mountinfo,
                       std::string_view proc_cgroup, bool v2) {
  mount m;
  std::string cgroup;
  if (!find_mount(mountinfo, v2, m) || !find_cgroup(proc_cgroup, v2, cgroup)) return 0;
  // Below the mount's root as /proc/self/cgroup names it from the host's view; in a cgroup
  // namespace, or when the path lies outside the mounted part, the mount itself is the
  // process's cgroup (what the JVM assumes too).
  std::string rel;
  if (m.root == "/") {
    rel = cgroup;
  } else if (cgroup.compare(0, m.root.size(), m.root) == 0 &&
             (cgroup.size() == m.root.size() || cgroup[m.root.size()] == '/')) {
    rel = cgroup.substr(m.root.size());
  }
  const fs::path top = root / fs::path(m.point).relative_path();
  const fs::path below = fs::path(rel).relative_path();
  fs::path dir = below.empty() ? top : top / below;
  std::error_code ec;  // the overload that reports instead of throwing (EACCES, ELOOP)
  if (!fs::is_directory(dir, ec)) dir = top;
  double lowest = 0;
  for (;;) {
    const double q = quota_at(dir, v2);
    if (q > 0 && (lowest == 0 || q < lowest)) lowest = q;
    if (dir == top || dir.native().size() <= top.native().size()) break;
    dir = dir.parent_path();
  }
  return lowest;
}

}  // namespace

double parse_cpu_max(std::string_view text) {
  const auto parts = split(trim(text), ' ');
  long long quota = 0, period = 0;
  if (parts.size() != 2 || parts[0] == "max") return 0;
  if (!to_int(parts[0], quota) || !to_int(parts[1], period) || quota <= 0 || period <= 0) return 0;
  return static_cast<double>(quota) / static_cast<double>(period);
}

double parse_cfs_quota(std::string_view quota_us, std::string_view period_us) {
  long long quota = 0, period = 0;
  if (!to_int(quota_us, quota) || !to_int(period_us, period) || quota <= 0 || period <= 0) return 0;
  return static_cast<double>(quota) / static_cast<double>(period);
}

double cgroup_cpu_quota(const fs::path& root) {
  const std::string mountinfo = read_file(root / "proc/self/mountinfo");
  const std::string proc_cgroup = read_file(root / "proc/self/cgroup");
  // Hybrid hosts mount both; the cpu controller is in one of them, and the lower quota wins.
  const double v1 = hierarchy_quota(root, mountinfo, proc_cgroup, false);
  const double v2 = hierarchy_quota(root, mountinfo, proc_cgroup, true);
  if (v1 > 0 && v2 > 0) return std::min(v1, v2);
  return v1 > 0 ? v1 : v2;
}

}  // namespace corvid::detail
