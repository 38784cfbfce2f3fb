#include "verbs.hpp"

#include <cstdlib>

#include "providers.hpp"

namespace corvid::verbs {

std::string_view to_string(wc_status s) noexcept {
  switch (s) {
    case wc_status::success:
      return "success";
    case wc_status::loc_len_err:
      return "local length error";
    case wc_status::loc_qp_op_err:
      return "local queue pair operation error";
    case wc_status::loc_prot_err:
      return "local protection error";
    case wc_status::loc_access_err:
      return "local access error";
    case wc_status::wr_flush_err:
      return "work request flushed";
    case wc_status::rem_inv_req_err:
      return "remote invalid request";
    case wc_status::rem_access_err:
      return "remote access error";
    case wc_status::rem_op_err:
      return "remote operation error";
    case wc_status::retry_exc_err:
      return "transport retry counter exceeded";
    case wc_status::rnr_retry_exc_err:
      return "RNR retry counter exceeded";
    case wc_status::general_err:
      return "general error";
  }
  return "unknown status";
}

std::uint32_t rnr_timer_us(std::uint8_t code) noexcept {
  // InfiniBand spec table 45 (the encoding of ibv_qp_attr::min_rnr_timer), in microseconds.
  static constexpr std::uint32_t table[32] = {
      655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
      480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
      20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return table[code & 31];
}

std::string resolve_provider(std::string_view requested) {
  if (!requested.empty()) return std::string(requested);
  const char* env = std::getenv("CORVID_VERBS_PROVIDER");
  if (env != nullptr && *env != '\0') return env;
  return "ibverbs";
}

result<std::unique_ptr<device>> open_device(const device_options& options) {
  const std::string provider = resolve_provider(options.provider);
  if (provider == "soft") return soft::open_device(options);
  if (provider == "ibverbs") return ib::open_device(options);
  return unexpected(
      rpc_error(rpc_errc::invalid_argument,
                "unknown verbs provider '" + provider + "' (expected \"ibverbs\" or \"soft\")"));
}

}  // namespace corvid::verbs
