#include "server_memory.hpp"

#include <algorithm>
#include <utility>

namespace corvid::detail {
namespace {
// A batch of small calls reserves in-flight room in steps of this, not per call.
constexpr std::size_t credit_step = 64 * 1024;

// Reserves `missing` bytes (> 0) on `t`, rounded up to a credit step when the step fits in
// `room`: what was reserved, 0 if not even `missing` fits.
std::size_t reserve_step(memory_tracker& t, std::size_t missing, std::size_t room) noexcept {
  if (missing > room) return 0;
  const std::size_t step = std::min(std::max(missing, credit_step), room);
  if (t.try_reserve(step)) return step;
  if (step != missing && t.try_reserve(missing)) return missing;
  return 0;
}

std::size_t sat_sub(std::size_t a, std::size_t b) noexcept { return a > b ? a - b : 0; }

// Reads and running calls together stay 1/16 of the server limit short of it: replies are
// charged after they are encoded (the memory exists by then), and that headroom is theirs.
std::size_t in_flight_limit(std::size_t server, std::size_t reads) {
  if (server == unlimited_memory) return unlimited_memory;
  const std::size_t headroom = server / 16;
  return server > reads + headroom ? server - reads - headroom : 0;
}
}  // namespace

server_memory::server_memory(const server_config& config)
    : server("server", config.max_memory.resolve(), &memory_tracker::process()),
      read_buffers("read_buffers",
                   memory_limit::share_of_ram(config.read_buffer_share).resolve(server.limit()),
                   &server),
      queued_replies("queued_replies", unlimited_memory, &server),
      in_flight("in_flight", in_flight_limit(server.limit(), read_buffers.limit()), &server),
      tls_sessions("tls_sessions", unlimited_memory, &server),
      pre_auth("pre_auth",
               server.limit() == unlimited_memory
                   ? unlimited_memory
                   : memory_limit::share_of_ram(config.pre_auth_share).resolve(server.limit()),
               &server),
      max_queued_reply_bytes(config.max_queued_reply_bytes),
      max_call_bytes_per_connection(config.max_call_bytes_per_connection),
      fair_reserve(server.limit() == unlimited_memory ? 0 : server.limit() / 16),
      light_limit(server.limit() == unlimited_memory ? 0 : server.limit() / 256) {}

void server_memory::add_holder(const void* key, std::function<void()> reclaim) {
  std::lock_guard lk(mutex_);
  holders_.emplace(key, std::move(reclaim));
}

void server_memory::remove_holder(const void* key) {
  std::lock_guard lk(mutex_);
  holders_.erase(key);
}

void server_memory::wait(std::function<void()> resume, const std::function<bool()>& enough,
                         bool for_read, bool light, std::size_t need) {
  std::unordered_map<const void*, std::function<void()>> reclaim;
  {
    std::lock_guard lk(mutex_);
    auto& q = for_read ? read_waiters_ : light ? light_call_waiters_ : call_waiters_;
    q.push_back({std::move(resume), need});
    waiters_.fetch_add(1, std::memory_order_relaxed);
    reclaim.swap(holders_);
  }
  for (auto& [key, r] : reclaim) r();  // their releases notify us
  // Pairs with the fence in notify(): either that notify sees the waiter, or this check sees
  // the memory it released.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Memory freed in between: wake whoever fits (us included); spurious resumes just retry.
  if (enough()) notify();
}

std::size_t server_memory::take_ready(std::deque<waiter>& q, std::size_t available,
                                      std::vector<std::function<void()>>& ready) {
  // In order: a large waiter at the front is not overtaken forever by small ones behind it.
  while (!q.empty() && q.front().need <= available) {
    available -= q.front().need;
    ready.push_back(std::move(q.front().resume));
    q.pop_front();
  }
  return available;
}

void server_memory::notify() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lk(mutex_);
    take_ready(read_waiters_, read_buffers.available(), ready);
    const std::size_t calls = in_flight.available();
    const std::size_t left = take_ready(light_call_waiters_, calls, ready);
    // Heavy waiters once no light one waits, with what is free beyond the fair reserve.
    if (light_call_waiters_.empty()) {
      const std::size_t beyond = sat_sub(server.available(), fair_reserve + (calls - left));
      take_ready(call_waiters_, std::min(left, beyond), ready);
    }
    waiters_.store(read_waiters_.size() + light_call_waiters_.size() + call_waiters_.size(),
                   std::memory_order_relaxed);
  }
  for (auto& r : ready) r();
}

connection_memory::connection_memory(server_memory& server, const std::string& name)
    : server_(server),
      read_(name, unlimited_memory, &server.read_buffers),
      replies_(name, unlimited_memory, &server.queued_replies),
      calls_(name, server.max_call_bytes_per_connection, &server.in_flight) {}

bool connection_memory::reserve_pre_auth(std::size_t bytes, const std::string& name) {
  if (server_.fair_reserve != 0 && server_.server.available() < server_.fair_reserve + bytes) {
    return false;  // the fair reserve is for established light clients
  }
  if (!pre_auth_) pre_auth_.emplace(name, unlimited_memory, &server_.pre_auth);
  return pre_auth_->try_reserve(bytes);
}

bool connection_memory::end_pre_auth(bool as_tls, const std::string& name) {
  const std::size_t held = pre_auth_ ? pre_auth_->current() : 0;
  if (held != 0) pre_auth_->release(held);
  bool ok = true;
  if (as_tls) {
    if (!tls_) tls_.emplace(name, unlimited_memory, &server_.tls_sessions);
    ok = tls_->try_reserve(held);
  }
  server_.notify();
  return ok;
}

connection_memory::~connection_memory() {
  // The trackers give back what is still charged as they go; then waiters may proceed.
  read_.release(read_.current());
  replies_.release(replies_.current());
  calls_.release(calls_.current());
  release_tls();
  if (pre_auth_) pre_auth_->release(pre_auth_->current());
  server_.notify();
}

bool connection_memory::reserve_read(std::size_t capacity) noexcept {
  if (capacity <= read_charged_) return true;
  if (!read_.try_reserve(capacity - read_charged_)) return false;
  read_charged_ = capacity;
  return true;
}

bool connection_memory::reserve_read_speculative(std::size_t capacity) noexcept {
  if (capacity <= read_charged_) return true;
  const std::size_t growth = capacity - read_charged_;
  if (server_.read_buffers.current() + growth > server_.read_buffers.limit() / 2) return false;
  return reserve_read(capacity);
}

bool connection_memory::reserve_first_read(std::size_t capacity) noexcept {
  if (reserve_read(capacity)) return true;
  if (server_.server.available() < server_.fair_reserve + capacity) return false;
  read_.reserve(capacity - read_charged_);  // past the read share, within the server's room
  read_charged_ = capacity;
  return true;
}

void connection_memory::settle_read(std::size_t capacity) noexcept {
  if (capacity > read_charged_) {
    read_.reserve(capacity - read_charged_);
  } else if (capacity < read_charged_) {
    read_.release(read_charged_ - capacity);
    server_.notify();
  }
  read_charged_ = capacity;
}

std::size_t connection_memory::fair_room() const noexcept {
  if (server_.fair_reserve == 0) return unlimited_memory;
  const std::size_t available = server_.server.available();
  const std::size_t held_now = held();
  const std::size_t light = held_now < server_.light_limit ? server_.light_limit - held_now : 0;
  const std::size_t heavy = available > server_.fair_reserve ? available - server_.fair_reserve : 0;
  return std::max(std::min(light, available), heavy);
}

bool connection_memory::admit_more(std::size_t bytes) noexcept {
  const std::size_t got = reserve_step(calls_, bytes - credit_, fair_room());
  credit_ += got;
  return got != 0;
}

void connection_memory::release_credit() noexcept {
  if (credit_ == 0) return;
  calls_.release(std::exchange(credit_, 0));
  server_.notify();
}

std::size_t connection_memory::allowance_more(std::size_t want) noexcept {
  if (!admit_more(want)) {
    // All there is (another reactor may take some in between: then nothing more).
    const std::size_t room = std::min(calls_.available(), fair_room());
    if (room != 0 && calls_.try_reserve(room)) {
      credit_ += room;
    }
  }
  return credit_;
}

std::size_t connection_memory::take_admitted() noexcept { return std::exchange(admitted_, 0); }

void connection_memory::return_admitted() noexcept { credit_ += std::exchange(admitted_, 0); }

void connection_memory::call_done(std::size_t bytes) noexcept {
  if (bytes == 0) return;
  calls_.release(bytes);
  server_.notify();
}

void connection_memory::end_batch() noexcept {
  if (credit_ == 0) return;
  calls_.release(std::exchange(credit_, 0));
  server_.notify();
}

bool connection_memory::reserve_reply_more(std::size_t bytes, std::size_t queued) noexcept {
  const std::size_t spare = replies_charged_ > queued ? replies_charged_ - queued : 0;
  const std::size_t got = reserve_step(replies_, bytes - spare, fair_room());
  replies_charged_ += got;
  return got != 0;
}

void connection_memory::settle_replies(std::size_t queued) noexcept {
  if (queued > replies_charged_) {
    replies_.reserve(queued - replies_charged_);  // small frames queued without a reservation
    replies_charged_ = queued;
    return;
  }
  // A spare of reply_keep stays for the next reply, so a connection answering one call at a
  // time touches no tracker per call; with anyone waiting for memory, nothing stays.
  const std::size_t keep = queued + (server_.has_waiters() ? 0 : reply_keep);
  if (replies_charged_ > keep) {
    replies_.release(replies_charged_ - keep);
    replies_charged_ = keep;
    server_.notify();
  }
}

void connection_memory::drop_reply_spare(std::size_t queued) noexcept {
  if (replies_charged_ <= queued) return;
  replies_.release(replies_charged_ - queued);
  replies_charged_ = queued;
  server_.notify();
}

}  // namespace corvid::detail
