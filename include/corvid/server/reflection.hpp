#pragma once
// The reflection method a server answers when server_config::reflection is set (registered by
// rpc_server itself, as the health method is; gRPC's reflection service is opt-in too):
//
//   auto s = co_await client.call<&corvid::reflection_service::describe>();  // std::string
//
// The text is what corvid::describe_schema<F...>() writes for every handler the user
// registered (plain, coroutine, streaming, blocking; free or member functions), without the
// built-in health and reflection methods: docs/codec.md, "Checking a change". A server
// without the setting answers function_not_found, as for any unknown method.
#include <string>
#include <vector>

#include "corvid/export.hpp"
#include "corvid/schema/describe_schema.hpp"

namespace corvid {

namespace detail {
class server_core;
}

class CORVID_API reflection_service {
 public:
  // Written on each call: calls are rare (a tool asking once), the handler list is fixed
  // from start() on, so a cache would save little and hold the text for the server's life.
  std::string describe() const;

 private:
  friend class detail::server_core;  // records each handler as it is registered
  std::vector<detail::describe_fn> describers_;
};

}  // namespace corvid
