// file:///path: one address per line ('#' starts a comment), re-read when the file changes.
// The file is outside input: at most 16 MiB is read, a line that is not an address is
// rejected (counted, written once) and the others are used, and at most 2 *
// lb_config::max_endpoints are handed over, those handed over before first.
#include <cstdio>
#include <fstream>

#include "endpoint_source.hpp"
#include "rejection_log.hpp"
#include "stoppable_worker.hpp"
#include <sys/stat.h>

namespace corvid::discovery {
namespace {

struct file_id {
  timespec mtime{};
  off_t size = -1;
  ino_t inode = 0;
  bool operator==(const file_id& o) const {
    return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size &&
           inode == o.inode;
  }
};

bool stat_file(const std::string& path, file_id& out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  out = {st.st_mtim, st.st_size, st.st_ino};
  return true;
}

constexpr std::size_t max_file_bytes = 16u << 20;

// The file's endpoints, its rejected lines logged; `held`: what was handed over last.
expected<std::vector<lb_endpoint>, rpc_error> read_endpoints(const std::string& path,
                                                             const lb_config& config,
                                                             const std::vector<lb_endpoint>& held,
                                                             rejection_log& log) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unexpected(rpc_error(rpc_errc::invalid_argument, "cannot read " + path));
  // Read no more than the bound plus one byte: a larger file is refused, not loaded.
  std::string text(max_file_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_file_bytes) {
    log.reject_many(metrics::discovery_reject::too_large, 1, path + " is larger than 16 MiB");
    return unexpected(rpc_error(rpc_errc::invalid_argument, path + " is larger than 16 MiB"));
  }
  auto list = parse_endpoint_list(text, '\n');
  log.begin_round();
  for (const auto& [line, why] : list.rejected) log.reject(line, why);
  log.end_round();
  const std::size_t limit = std::max<std::size_t>(config.max_endpoints, 1) * 2;
  if (const std::size_t dropped = keep_bounded(list.endpoints, held, limit)) {
    log.reject_many(metrics::discovery_reject::over_limit, dropped,
                    "lines past the source's bound (2 * lb_config::max_endpoints)");
  }
  return std::move(list.endpoints);
}

class file_source final : public endpoint_source {
 public:
  file_source(std::string path, const lb_config& config, endpoints_callback cb)
      : path_(std::move(path)),
        config_(config),
        log_(config, "file://" + path_),
        cb_(std::move(cb)) {}
  // The first read, on the opener's thread: its error is open()'s.
  rpc_error open() {
    if (!stat_file(path_, seen_)) {
      return rpc_error(rpc_errc::invalid_argument, "no endpoints file " + path_);
    }
    auto list = read_endpoints(path_, config_, held_, log_);
    if (!list) return std::move(list).error();
    held_ = *list;
    cb_(std::move(*list));
    worker_.start_polling(config_.file_poll_interval, [this] { poll(); });
    return {};
  }

 private:
  // Polling the file's identity (mtime, size, inode) also sees a file replaced by rename,
  // which is how configuration tools write; a file that vanished or does not parse keeps
  // the last endpoints.
  // Whatever goes wrong (out of memory), the thread never ends the process: that read is
  // skipped, and the next change is read.
  void poll() {
    file_id now;
    if (!stat_file(path_, now) || now == seen_) return;
    seen_ = now;
    try {
      auto list = read_endpoints(path_, config_, held_, log_);
      if (!list) return;
      held_ = *list;
      cb_(std::move(*list));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "corvid: discovery file://%s: %s\n", path_.c_str(), e.what());
    }
  }

  const std::string path_;
  const lb_config config_;
  rejection_log log_;
  endpoints_callback cb_;
  file_id seen_;
  std::vector<lb_endpoint> held_;  // what was handed over last
  stoppable_worker worker_;        // last: its thread goes before what it uses
};

}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_file_source(std::string path,
                                                                       const lb_config& config,
                                                                       endpoints_callback cb) {
  auto source = std::make_unique<file_source>(std::move(path), config, std::move(cb));
  if (auto e = source->open()) return unexpected(std::move(e));
  return std::unique_ptr<endpoint_source>(std::move(source));
}

}  // namespace corvid::discovery
