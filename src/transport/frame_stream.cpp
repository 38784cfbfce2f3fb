#include "frame_stream.hpp"

namespace corvid::detail {

std::string describe_bad_header(protocol::header_errc e, const protocol::frame_header& h,
                                std::uint32_t limit, std::string_view what,
                                std::string_view limit_name, std::string_view expected) {
  if (e == protocol::header_errc::too_large) {
    return std::string(what) + " of " + std::to_string(h.payload_size()) + " bytes exceeds " +
           std::string(limit_name) + " " + std::to_string(limit);
  }
  if (e != protocol::header_errc::ok) return std::string(protocol::to_string(e));
  return "expected " + std::string(expected);
}

}  // namespace corvid::detail
