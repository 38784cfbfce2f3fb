#pragma once
// A non-owning buffer sequence over a contiguous array of asio buffers. asio's composed write
// copies the sequence object it is given; passing this instead of a std::vector keeps that
// copy free of heap allocation.
#include <vector>

#include "corvid/detail/asio.hpp"

namespace corvid::detail {

struct buffer_range {
  const asio::const_buffer* first;
  const asio::const_buffer* last;
  explicit buffer_range(const std::vector<asio::const_buffer>& v)
      : first(v.data()), last(v.data() + v.size()) {}
  const asio::const_buffer* begin() const noexcept { return first; }
  const asio::const_buffer* end() const noexcept { return last; }
};

}  // namespace corvid::detail
