#pragma once
// Set by a reader whose batch ended in the middle of a frame: its peer is still writing the
// rest (a big request, or a big batch arriving in pieces). The adaptive reactor loop then
// sleeps instead of polling for it: by the time a sleeping reactor wakes, more of the frame
// has arrived, so it reads it in fewer, larger reads, where a poller would take each piece
// as it lands (measured: 4 KiB calls at c=256 lost 30 % of their rate that way).
namespace corvid::detail {

inline thread_local bool partial_frame_seen = false;

inline void note_partial_frame() noexcept { partial_frame_seen = true; }

}  // namespace corvid::detail
