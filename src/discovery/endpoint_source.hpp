#pragma once
// Where a load_balancer::open() balancer learns its endpoints: a fixed list, a file re-read
// on change, DNS re-resolved periodically, or an etcd prefix followed by a watch. Each source
// hands over the whole set whenever it changes; a source that cannot reach its origin keeps
// quiet, so the balancer keeps the endpoints it last knew.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "corvid/client/lb_config.hpp"
#include "corvid/error.hpp"
#include "corvid/expected.hpp"

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

// The parts of each source (one file each).
expected<std::vector<lb_endpoint>, rpc_error> parse_endpoint_list(std::string_view text,
                                                                  char separator);
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
