#pragma once
// How much a connection offers the kernel per read, the same on both sides: 4 KiB at first,
// doubled by each read that fills it, up to max (so a busy connection takes many frames per
// recv, and an idle one holds little). max is also the size up to which a grown read buffer
// is kept between batches while big frames keep coming, and the buffer pool's largest class.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "corvid/memory/buffer_pool.hpp"

namespace corvid::detail {

class read_room {
 public:
  static constexpr std::size_t initial = 4096;
  static constexpr std::size_t max = buffer_pool::largest_class;

  std::size_t get() const noexcept { return room_; }
  // A read of `n` bytes into `offered` bytes of room: a full one asks for more next time.
  void after_read(std::size_t n, std::size_t offered) noexcept {
    if (n == offered && room_ < max) room_ *= 2;
  }
  // No more than `limit` (what memory allows, or the idle size): regrown only by use.
  void cap(std::size_t limit) noexcept { room_ = std::max<std::size_t>(std::min(room_, limit), 1); }
  void reset() noexcept { room_ = initial; }

 private:
  std::size_t room_ = initial;
};

}  // namespace corvid::detail
