#pragma once
// The Prometheus text exposition format, version 0.0.4: what GET /metrics answers.
#include <string>

#include "prometheus_writer.hpp"
#include "snapshot.hpp"

namespace corvid::metrics {

inline constexpr const char* prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

std::string prometheus_text(const server_snapshot& s);

}  // namespace corvid::metrics
