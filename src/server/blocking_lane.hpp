#pragma once
// One connection's blocking calls waiting for a worker thread (worker_pool serves the
// connections with calls waiting in turns). It lives in its connection and allocates
// nothing: the calls link through blocking_job::next. Every field belongs to the pool and is
// read or written only under its mutex. The pool links a lane only while it holds calls, and
// each call holds its connection alive, so a linked lane is never destroyed.
#include <cstdint>

#include "corvid/detail/blocking_job.hpp"

namespace corvid::detail {

struct blocking_lane {
  blocking_job* head = nullptr;  // the connection's waiting calls, in arrival order
  blocking_job* tail = nullptr;
  blocking_lane* next = nullptr;  // in the pool's list of lanes with calls waiting
  // Once emptied, the lane counts as fresh (worker_pool) again only from this many turns of
  // the backlog on: once every lane in the backlog when it was last served has had a turn.
  std::uint64_t fresh_from = 0;
};

}  // namespace corvid::detail
