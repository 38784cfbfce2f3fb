#pragma once
// corvid for a client program: connections (rpc_client), pools (client_pool), balancers
// (load_balancer), call options, the client's ends of streams, and task, sync_wait, expected
// and rpc_error. Nothing of the server's (rpc_server, request_context, the handler invokers):
// tests/client/role_headers.cmake holds it to that.
//
// The functions a client names in call<f>() are usually declared in a header the server
// shares; it includes what their signatures use (corvid/task.hpp, corvid/stream/stream.hpp).
// Not included here, for the programs that use them: corvid/runtime/io_pool.hpp (reactors of
// one's own, client_config::pool), corvid/runtime/sleep.hpp, corvid/memory/.
#include "corvid/client/async_reply.hpp"
#include "corvid/client/client_config.hpp"
#include "corvid/client/client_metrics.hpp"
#include "corvid/client/client_pool.hpp"
#include "corvid/client/lb_config.hpp"
#include "corvid/client/load_balancer.hpp"
#include "corvid/client/pool_config.hpp"
#include "corvid/client/rpc_client.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/error.hpp"
#include "corvid/expected.hpp"
#include "corvid/protocol/health.hpp"
#include "corvid/rdma/ibv_config.hpp"
#include "corvid/runtime/tls_config.hpp"
#include "corvid/runtime/transport_stats.hpp"
#include "corvid/stream/stream_reader.hpp"
#include "corvid/stream/stream_writer.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"
#include "corvid/trace/trace_context.hpp"
#include "corvid/trace/trace_scope.hpp"
#include "corvid/version.hpp"
