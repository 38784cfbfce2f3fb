#pragma once
// Per-message zstd compression (README "Call policies", docs/protocol.md "Compression").
// A client that enables it says so on its requests; a server that has it on says so on its
// replies. From then on each side compresses the frames it sends that peer (requests,
// replies, stream items) of at least `min_bytes`, when zstd makes them smaller. Handlers and
// callers see plain bytes, and a receiver inflates only what its limits allow: the declared
// size is checked and charged before anything is allocated, and a payload that inflates to
// anything else is refused.
#include <cstddef>

namespace corvid {

struct compression_config {
  // Client: ask for compression on this connection; server: grant it to clients that ask.
  // Receiving compressed frames needs nothing: every corvid peer can.
  bool enabled = false;
  // Smaller frames are sent as they are (compressing them costs more than it saves).
  std::size_t min_bytes = 4096;
  // zstd's level: 1 is fast and still shrinks text-like payloads several-fold.
  int level = 1;
};

}  // namespace corvid
