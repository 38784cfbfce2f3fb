#pragma once
// corvid for a server program: rpc_server and its server_config, request_context, handlers'
// streams (stream<T> out, stream_reader<U> in), the health method, reflection, the runtime
// (io_pool, sleep, cpu_budget), memory limits, trace spans, and task, sync_wait, expected and
// rpc_error. None of the client's connection, pool or balancer headers:
// tests/client/role_headers.cmake holds it to that. (client_metrics comes with server_config,
// whose client_metrics field shows a service's own clients on its /metrics.) A server that
// also calls other services includes corvid/client.hpp too, or corvid/corvid.hpp.
#include "corvid/call_metadata.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/error.hpp"
#include "corvid/expected.hpp"
#include "corvid/memory/memory_limit.hpp"
#include "corvid/memory/memory_tracker.hpp"
#include "corvid/memory/memory_usage.hpp"
#include "corvid/protocol/health.hpp"
#include "corvid/rdma/ibv_config.hpp"
#include "corvid/runtime/cpu_budget.hpp"
#include "corvid/runtime/io_pool.hpp"
#include "corvid/runtime/sleep.hpp"
#include "corvid/runtime/tls_config.hpp"
#include "corvid/runtime/transport_stats.hpp"
#include "corvid/server/authorization.hpp"
#include "corvid/server/interceptor.hpp"
#include "corvid/server/peer_identity.hpp"
#include "corvid/server/reflection.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/server/rpc_server.hpp"
#include "corvid/server/server_config.hpp"
#include "corvid/stream/stream.hpp"
#include "corvid/stream/stream_reader.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"
#include "corvid/trace/span.hpp"
#include "corvid/trace/trace_context.hpp"
#include "corvid/trace/trace_scope.hpp"
#include "corvid/version.hpp"
