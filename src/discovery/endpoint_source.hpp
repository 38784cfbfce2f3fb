#pragma once
// Where a load_balancer::open() balancer learns its endpoints: a fixed list, a file re-read
// on change, DNS re-resolved periodically, or an etcd prefix followed by a watch. Each source
// hands over the whole set whenever it changes; a source that cannot reach its origin keeps
// quiet, so the balancer keeps the endpoints it last knew.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "corvid/client/lb_config.hpp"
#include "corvid/error.hpp"
#include "corvid/expected.hpp"

#include "rejection.hpp"

namespace corvid::discovery {

using endpoints_callback = std::function<void(std::vector<lb_endpoint>)>;

class endpoint_source {
 public:
  virtual ~endpoint_source() = default;  // stops and joins the source's thread, if any
  // An endpoint failed: a source that can look again (DNS) does so soon.
  virtual void refresh_soon() {}
};

// Looks the name up once (so a bad URL or an unreachable origin is the caller's error), hands
// the result to `on_change`, then follows the name in the background.
expected<std::unique_ptr<endpoint_source>, rpc_error> open_source(std::string_view url,
                                                                  const lb_config& config,
                                                                  endpoints_callback on_change);

// A list of addresses (list://, file://): items separated by `separator`, '#' starts a
// comment, blanks around an item are dropped. Each item is checked (check_address): the
// ones that may not be dialled are rejected with the item as their key.
struct endpoint_list {
  std::vector<lb_endpoint> endpoints;
  std::vector<std::pair<std::string, rejection>> rejected;
};
endpoint_list parse_endpoint_list(std::string_view text, char separator);

// Keeps at most `limit` entries of `list`, in its order: first those whose address is in
// `held` (what the source handed over last), then the others. Returns how many it dropped.
std::size_t keep_bounded(std::vector<lb_endpoint>& list, const std::vector<lb_endpoint>& held,
                         std::size_t limit);

// The parts of each source (one file each).
expected<std::unique_ptr<endpoint_source>, rpc_error> open_file_source(std::string path,
                                                                       const lb_config& config,
                                                                       endpoints_callback cb);
expected<std::unique_ptr<endpoint_source>, rpc_error> open_etcd_source(std::string_view url,
                                                                       const lb_config& config,
                                                                       endpoints_callback cb);
expected<std::unique_ptr<endpoint_source>, rpc_error> open_dns_source(std::string_view url,
                                                                      const lb_config& config,
                                                                      endpoints_callback cb);

}  // namespace corvid::discovery
