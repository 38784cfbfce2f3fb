#pragma once
// A process's memory as the kernel sees it (/proc/<pid>/status), for the tests and benchmarks
// that bound what a server holds.
#include <cstddef>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

#include <sys/types.h>

namespace corvid::test {

// A "<field>: <n> kB" line of /proc/<pid>/status (this process when pid is 0), in bytes; 0 if
// unreadable (the process is gone).
inline std::size_t proc_status_bytes(std::string_view field, pid_t pid = 0) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/status")
                            : "/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size(), field) == 0 && line.size() > field.size() &&
        line[field.size()] == ':') {
      return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10) * 1024;
    }
  }
  return 0;
}
// Resident set size.
inline std::size_t vm_rss(pid_t pid = 0) { return proc_status_bytes("VmRSS", pid); }
// The highest RSS since the process started or since reset_vm_hwm().
inline std::size_t vm_hwm() { return proc_status_bytes("VmHWM"); }
// Restarts VmHWM from the current RSS (Linux >= 4.0: "5" to /proc/self/clear_refs); false
// where that is not allowed, and VmHWM then still holds the process's older peak.
inline bool reset_vm_hwm() {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

}  // namespace corvid::test
