#pragma once
// The seeds' other experiments, each a sub-command printing its own short table.
#include "options.hpp"

namespace corvid::bench {

int run_pipeline_experiment(const options& o);      // seed 001
int run_coalesce_experiment(const options& o);      // seed 002
int run_reactors_experiment(const options& o);      // seed 003
int run_stream_experiment(const options& o);        // streams vs unary calls
int run_latency_experiment(const options& o);       // issue 17: busy-poll vs sockperf (latency.cpp)
int run_discovery_experiment(const options& o);     // issue 25: etcd + consistent hashing
int run_discovery_server(const options& o);         // one of its servers (a child process)
int run_registry_flood(const options& o);           // issue 32: a balancer following N endpoints
int run_blocking_fairness(const options& o);        // a newcomer's blocking call beside full queues
int run_pool_experiment(const options& o);          // one client_pool vs plain connections
int run_hedging_experiment(const options& o);       // hedged calls over a fleet with stalls
int run_retry_budget_experiment(const options& o);  // retries with and without a budget
int run_compression_experiment(const options& o);   // per-message zstd on loopback
int run_auth_experiment(const options& o);          // call metadata, interceptors, refusals
int run_auth_server(const options& o);              // one of its servers alone (callgrind)

}  // namespace corvid::bench
