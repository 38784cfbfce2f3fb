#include "endpoint_source.hpp"

#include <cctype>

namespace corvid::discovery {

expected<std::vector<lb_endpoint>, rpc_error> parse_endpoint_list(std::string_view text,
                                                                  char separator) {
  std::vector<lb_endpoint> out;
  while (!text.empty()) {
    const auto end = text.find(separator);
    std::string_view item = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (const auto hash = item.find('#'); hash != std::string_view::npos)
      item = item.substr(0, hash);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.empty()) continue;
    if (!item.starts_with("unix:") && item.rfind(':') == std::string_view::npos) {
      return unexpected(rpc_error(rpc_errc::invalid_argument,
                                  "endpoint without a port: '" + std::string(item) + "'"));
    }
    lb_endpoint e;
    e.address = std::string(item);
    out.push_back(std::move(e));
  }
  return out;
}

namespace {
// list://: nothing to follow.
class fixed_source final : public endpoint_source {};
}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_source(std::string_view url,
                                                                  const lb_config& config,
                                                                  endpoints_callback on_change) {
  if (url.starts_with("list://")) {
    auto list = parse_endpoint_list(url.substr(7), ',');
    if (!list) return unexpected(std::move(list).error());
    if (list->empty()) {
      return unexpected(rpc_error(rpc_errc::invalid_argument, "list:// names no endpoint"));
    }
    on_change(std::move(*list));
    return std::unique_ptr<endpoint_source>(std::make_unique<fixed_source>());
  }
  if (url.starts_with("file://"))
    return open_file_source(std::string(url.substr(7)), config, std::move(on_change));
  if (url.starts_with("etcd://")) return open_etcd_source(url, config, std::move(on_change));
  if (url.starts_with("dns://")) return open_dns_source(url, config, std::move(on_change));
  return unexpected(rpc_error(
      rpc_errc::invalid_argument,
      "unknown naming scheme in '" + std::string(url) + "' (list://, file://, dns:// or etcd://)"));
}

}  // namespace corvid::discovery
