// file:///path: one address per line ('#' starts a comment), re-read when the file changes.
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <thread>

#include "endpoint_source.hpp"
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

expected<std::vector<lb_endpoint>, rpc_error> read_endpoints(const std::string& path) {
  std::ifstream in(path);
  if (!in) return unexpected(rpc_error(rpc_errc::invalid_argument, "cannot read " + path));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (16u << 20)) {
    return unexpected(rpc_error(rpc_errc::invalid_argument, path + " is larger than 16 MiB"));
  }
  return parse_endpoint_list(text.str(), '\n');
}

class file_source final : public endpoint_source {
 public:
  file_source(std::string path, std::chrono::milliseconds poll, endpoints_callback cb, file_id seen)
      : path_(std::move(path)), poll_(poll), cb_(std::move(cb)), seen_(seen) {
    thread_ = std::thread([this] { run(); });
  }
  ~file_source() override {
    {
      std::lock_guard lk(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  // Polling the file's identity (mtime, size, inode) also sees a file replaced by rename,
  // which is how configuration tools write; a file that vanished or does not parse keeps
  // the last endpoints.
  void run() {
    std::unique_lock lk(mutex_);
    while (!cv_.wait_for(lk, poll_, [&] { return stop_; })) {
      file_id now;
      if (!stat_file(path_, now) || now == seen_) continue;
      seen_ = now;
      auto list = read_endpoints(path_);
      if (list) cb_(std::move(*list));
    }
  }

  const std::string path_;
  const std::chrono::milliseconds poll_;
  endpoints_callback cb_;
  file_id seen_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_file_source(std::string path,
                                                                       const lb_config& config,
                                                                       endpoints_callback cb) {
  file_id seen;
  if (!stat_file(path, seen)) {
    return unexpected(rpc_error(rpc_errc::invalid_argument, "no endpoints file " + path));
  }
  auto list = read_endpoints(path);
  if (!list) return unexpected(std::move(list).error());
  cb(std::move(*list));
  return std::unique_ptr<endpoint_source>(std::make_unique<file_source>(
      std::move(path), config.file_poll_interval, std::move(cb), seen));
}

}  // namespace corvid::discovery
