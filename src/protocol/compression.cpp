// zstd per message: the frame layout is in compression.hpp, the rules in docs/protocol.md.
#include "compression.hpp"

#include <cstring>
#include <memory>
#include <zstd.h>
#include <zstd_errors.h>

namespace corvid::protocol {
namespace {

// One compression and one decompression context per thread (a reactor reuses them for every
// frame; a context costs a few hundred KB to make).
struct cctx_free {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct dctx_free {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, cctx_free> c(ZSTD_createCCtx());
  return c.get();
}

ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, dctx_free> d = [] {
    std::unique_ptr<ZSTD_DCtx, dctx_free> p(ZSTD_createDCtx());
    // Single-shot decompression writes straight into the caller's buffer and needs no window
    // buffer, whatever window the frame declares; the cap is for streaming use, belt and braces.
    if (p) ZSTD_DCtx_setParameter(p.get(), ZSTD_d_windowLogMax, 27);
    return p;
  }();
  return d.get();
}

void put_u32(char* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t get_u32(const char* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

}  // namespace

std::optional<inflated_sizes> read_inflated_sizes(std::string_view payload) noexcept {
  if (payload.size() < compressed_head_size) return std::nullopt;
  return inflated_sizes{get_u32(payload.data()), get_u32(payload.data() + 4)};
}

std::size_t deflate_bound(std::size_t bytes) noexcept {
  return compressed_head_size + ZSTD_compressBound(bytes);
}

bool deflate(std::string_view body, std::string_view attachment, int level, std::string& out) {
  ZSTD_CCtx* cctx = thread_cctx();
  if (cctx == nullptr) return false;
  const std::size_t total = body.size() + attachment.size();
  const std::size_t start = out.size();
  out.resize(start + deflate_bound(total));
  put_u32(out.data() + start, static_cast<std::uint32_t>(body.size()));
  put_u32(out.data() + start + 4, static_cast<std::uint32_t>(attachment.size()));
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  // The size in the zstd frame too: its decoder can then refuse a frame at its header.
  ZSTD_CCtx_setPledgedSrcSize(cctx, total);
  ZSTD_outBuffer dst{out.data() + start + compressed_head_size,
                     out.size() - start - compressed_head_size, 0};
  ZSTD_inBuffer first{body.data(), body.size(), 0};
  ZSTD_inBuffer second{attachment.data(), attachment.size(), 0};
  bool ok = true;
  while (ok && first.pos < first.size) {
    ok = !ZSTD_isError(ZSTD_compressStream2(cctx, &dst, &first, ZSTD_e_continue));
  }
  for (std::size_t left = 1; ok && left != 0;) {
    left = ZSTD_compressStream2(cctx, &dst, &second, ZSTD_e_end);
    ok = !ZSTD_isError(left);
  }
  if (!ok || compressed_head_size + dst.pos >= total) {
    out.resize(start);
    return false;
  }
  out.resize(start + compressed_head_size + dst.pos);
  return true;
}

std::string inflate(std::string_view payload, std::string& out) {
  const std::optional<inflated_sizes> sizes = read_inflated_sizes(payload);
  if (!sizes) return "a compressed payload shorter than its 8-byte head";
  ZSTD_DCtx* dctx = thread_dctx();
  if (dctx == nullptr) return "no memory for a zstd decompression context";
  out.resize(sizes->total());
  payload.remove_prefix(compressed_head_size);
  // Into exactly the declared room: a payload that inflates to more fails here (zstd stops at
  // the end of `out`), one that inflates to less is caught below.
  const std::size_t n =
      ZSTD_decompressDCtx(dctx, out.data(), out.size(), payload.data(), payload.size());
  if (ZSTD_isError(n)) {
    if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) {
      return "a compressed payload inflates to more than its declared " +
             std::to_string(sizes->total()) + " bytes";
    }
    return std::string("a compressed payload does not inflate: ") + ZSTD_getErrorName(n);
  }
  if (n != sizes->total()) {
    return "a compressed payload inflates to " + std::to_string(n) + " bytes, not its declared " +
           std::to_string(sizes->total());
  }
  return {};
}

}  // namespace corvid::protocol
