#pragma once
// A load_balancer's settings and the endpoints it is given (load_balancer.hpp): what a
// balancer's endpoint sources (src/discovery) need, without the balancer itself.
#include <chrono>
#include <cstddef>
#include <string>

#include "corvid/client/method_config.hpp"
#include "corvid/client/pool_config.hpp"
#include "corvid/client/retry_policy.hpp"

namespace corvid {

enum class lb_policy {
  round_robin,
  weighted_round_robin,
  random,
  power_of_two_choices,
  // Consistent hashing with bounded load (call_options::hash_key): a key keeps its endpoint
  // while that endpoint is up and carries at most hash_load_factor times the average calls
  // in flight; past that the call spills to the next endpoint on the ring. Removing one of N
  // endpoints moves only its ~1/N of the keys. Calls without a key: power of two choices.
  consistent_hash,
};

struct lb_endpoint {
  std::string address;  // "host:port" or "unix:/path"
  unsigned weight = 1;  // weighted_round_robin only
  // The instance's identity, which places it on the consistent-hash ring (a registered
  // server's instance id); empty = the address.
  std::string id{};
};

struct lb_config {
  lb_policy policy = lb_policy::round_robin;
  pool_config pool;  // settings of each endpoint's pool
  // An endpoint whose call fails to reach it (connect_failed, connection_closed) is ejected for
  // eject_base * 2^(ejections-1), at most eject_max; then one probe call decides. The calls
  // that were in flight when it failed count as one failure, not one each.
  std::chrono::milliseconds eject_base{1000};
  std::chrono::milliseconds eject_max{30000};
  // This many timeouts in a row with no success between them eject the endpoint too: a host
  // that went silent (no FIN, no RST) answers nothing, but its connection stays up until a
  // heartbeat gives up on it. 0 = timeouts never eject.
  unsigned eject_after_timeouts = 5;
  // consistent_hash: no endpoint takes a keyed call while it has more than this times the
  // average calls in flight (rounded up); >= 1.
  double hash_load_factor = 1.25;
  // Follow each endpoint's health (protocol/health.hpp) through its watch stream, opened on
  // one of the endpoint's pooled connections when it joins (which so stays open while the
  // endpoint is followed) and re-opened after it breaks, with the pool's reconnect back-off:
  // an endpoint saying not_serving or draining gets no new calls from the moment the watch
  // delivers it, and one ejected after failures returns as soon as its watch says serving.
  // false: no watch; ejected endpoints are still probed with the health method.
  bool follow_health = true;
  // At most this many endpoints are followed. Discovery entries beyond it are rejected (and
  // counted, corvid_discovery_rejected_total{reason="over_limit"}); endpoints already followed
  // keep their place before new ones, so a flood of registry keys cannot push out the servers
  // that are answering. add_endpoint() past it is refused the same way.
  std::size_t max_endpoints = 2048;
  // A registry value (etcd) larger than this is rejected unread: an instance's description
  // is a few hundred bytes.
  std::size_t max_registry_value_bytes = 4096;
  // An update from discovery that removes every endpoint keeps the last good set for this
  // long (a registry that lost its leases, an empty file being rewritten): gRPC's balancers
  // treat an empty address list as a resolver error too. A non-empty update ends it at once;
  // 0 = apply an empty update at once.
  std::chrono::milliseconds empty_update_grace{30000};
  // open("file://..."): how often the file is checked for a change.
  std::chrono::milliseconds file_poll_interval{250};
  // open("dns://..."): the DNS server ("127.0.0.1:5353"; empty = the system's resolv.conf)
  // and how often the name is looked up again (also soon after an endpoint fails).
  std::string dns_server;
  std::chrono::milliseconds dns_refresh_interval{30000};
  // Retries of idempotent methods, and the budget that throttles them (retry_policy.hpp).
  // The default sends nothing twice but a request that provably never left.
  retry_policy retry;
  // Per-method timeouts, idempotency, retries and hedging (method_config.hpp). A timeout given
  // with a call overrides its method's; streams follow none of these.
  method_config methods;
};

}  // namespace corvid
