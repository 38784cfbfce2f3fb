#pragma once
// Per-request context: a handler that declares `corvid::request_context&` as its first
// parameter sees who called, which request this is, and the request's attachment, and can set
// the reply's attachment. Attachments are raw bytes beside the encoded arguments, never encoded.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace corvid {

namespace detail {
class reply_channel;
}

class request_context {
 public:
  request_context(detail::reply_channel& channel, std::uint64_t request_id,
                  std::uint32_t function_id, std::string_view attachment,
                  std::chrono::steady_clock::time_point deadline =
                      std::chrono::steady_clock::time_point::max()) noexcept
      : channel_(&channel),
        request_id_(request_id),
        function_id_(function_id),
        request_attachment_(attachment),
        deadline_(deadline) {}

  std::uint64_t request_id() const noexcept { return request_id_; }
  std::uint32_t function_id() const noexcept { return function_id_; }
  // When the caller stops waiting (its timeout, carried on the wire), or nullopt if it has
  // none. A coroutine handler can give up on work whose result nobody will read.
  std::optional<std::chrono::steady_clock::time_point> deadline() const noexcept {
    if (deadline_ == std::chrono::steady_clock::time_point::max()) return std::nullopt;
    return deadline_;
  }
  // "ip:port" of the client.
  std::string peer_address() const;
  // The request's attachment; valid until the handler returns (coroutine handlers: until
  // the coroutine finishes).
  std::string_view request_attachment() const noexcept { return request_attachment_; }

  // The reply's attachment. A moved-in string is sent without copying; a view is copied
  // when the reply is queued, so it only needs to live until the handler returns.
  void set_response_attachment(std::string&& data) noexcept {
    owned_ = std::move(data);
    view_ = {};
    has_owned_ = true;
  }
  void set_response_attachment(std::string_view data) noexcept {
    view_ = data;
    owned_.clear();
    has_owned_ = false;
  }
  void set_response_attachment(const char* data) noexcept {
    set_response_attachment(std::string_view(data));
  }

  // Internal: hands the attachment to the reply writer.
  bool response_attachment_owned() const noexcept { return has_owned_; }
  std::string take_owned_attachment() noexcept { return std::move(owned_); }
  std::size_t owned_attachment_size() const noexcept { return owned_.size(); }
  std::string_view response_attachment_view() const noexcept { return view_; }

 private:
  detail::reply_channel* channel_;
  std::uint64_t request_id_;
  std::uint32_t function_id_;
  std::string_view request_attachment_;
  std::chrono::steady_clock::time_point deadline_;
  std::string owned_;
  std::string_view view_;
  bool has_owned_ = false;
};

}  // namespace corvid
