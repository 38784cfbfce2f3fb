#include "endpoint_source.hpp"

#include <cctype>
#include <unordered_set>

namespace corvid::discovery {

endpoint_list parse_endpoint_list(std::string_view text, char separator) {
  endpoint_list out;
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
    if (auto bad = check_address(item)) {
      out.rejected.emplace_back(std::string(item.substr(0, 200)), std::move(*bad));
      continue;
    }
    lb_endpoint e;
    e.address = std::string(item);
    out.endpoints.push_back(std::move(e));
  }
  return out;
}

std::size_t keep_bounded(std::vector<lb_endpoint>& list, const std::vector<lb_endpoint>& held,
                         std::size_t limit) {
  if (list.size() <= limit) return 0;
  std::unordered_set<std::string_view> before;
  for (const auto& e : held) before.insert(e.address);
  std::size_t held_listed = 0;
  for (const auto& e : list) held_listed += before.contains(e.address) ? 1 : 0;
  const std::size_t room = limit > held_listed ? limit - held_listed : 0;
  std::size_t fresh = 0;
  const std::size_t size = list.size();
  std::erase_if(list, [&](const lb_endpoint& e) {
    if (before.contains(e.address)) return false;
    return ++fresh > room;
  });
  return size - list.size();
}

namespace {
// list://: nothing to follow.
class fixed_source final : public endpoint_source {};
}  // namespace

expected<std::unique_ptr<endpoint_source>, rpc_error> open_source(std::string_view url,
                                                                  const lb_config& config,
                                                                  endpoints_callback on_change) {
  if (url.starts_with("list://")) {
    // The caller's own words: a bad item is its error, not an entry to skip.
    auto list = parse_endpoint_list(url.substr(7), ',');
    if (!list.rejected.empty()) {
      return unexpected(rpc_error(rpc_errc::invalid_argument,
                                  "list:// endpoint " + list.rejected.front().second.detail));
    }
    if (list.endpoints.empty()) {
      return unexpected(rpc_error(rpc_errc::invalid_argument, "list:// names no endpoint"));
    }
    on_change(std::move(list.endpoints));
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
