#include "admin_pages.hpp"

#include <cmath>
#include <cstdio>

#include "corvid/client/client_metrics.hpp"

#include "../metrics/prometheus_text.hpp"
#include <nlohmann/json.hpp>

namespace corvid::admin {
namespace {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string html_escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// 1234567 -> "1.2 MiB"
std::string bytes(std::uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  if (n < 1024 * 1024) return format("%.1f KiB", static_cast<double>(n) / 1024);
  if (n < 1024ull * 1024 * 1024) return format("%.1f MiB", static_cast<double>(n) / 1048576);
  return format("%.2f GiB", static_cast<double>(n) / 1073741824.0);
}

std::string duration(std::uint64_t ns) {
  if (ns < 1000) return std::to_string(ns) + " ns";
  if (ns < 1000000) return format("%.1f &micro;s", static_cast<double>(ns) / 1e3);
  if (ns < 1000000000) return format("%.2f ms", static_cast<double>(ns) / 1e6);
  return format("%.2f s", static_cast<double>(ns) / 1e9);
}

std::string limit(std::size_t v) { return v == unlimited_memory ? "unlimited" : bytes(v); }

void memory_list(std::string& out, const memory_usage& node) {
  out += "<li><span class=\"tracker\">" + html_escape(node.name) + "</span> " +
         bytes(node.current) + " (peak " + bytes(node.peak) + ", limit " + limit(node.limit) + ")";
  if (!node.children.empty()) {
    out += "<ul>";
    for (const auto& c : node.children) memory_list(out, c);
    out += "</ul>";
  }
  out += "</li>";
}

}  // namespace

bool needs_snapshot(std::string_view path) noexcept {
  return path == "/metrics" || path == "/status" || path == "/connections" || path == "/";
}

http_response error_response(int status, std::string_view reason) {
  http_response r;
  r.status = status;
  r.body = std::to_string(status) + " " + std::string(reason_phrase(status)) + ": " +
           std::string(reason) + "\n";
  return r;
}

std::string serialize(const http_response& r, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " +
                    std::string(reason_phrase(r.status)) + "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    "\r\nCache-Control: no-store\r\nConnection: close\r\n";
  if (!r.www_authenticate.empty()) out += "WWW-Authenticate: " + r.www_authenticate + "\r\n";
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

http_response route(const http_request& request, const metrics::server_snapshot& snapshot,
                    const server_config& config) {
  http_response r;
  if (request.path == "/health") {
    if (!snapshot.serving) return error_response(503, "stopping");
    r.body = "ok\n";
  } else if (request.path == "/metrics") {
    r.content_type = metrics::prometheus_content_type;
    r.body = metrics::prometheus_text(snapshot);
    if (config.client_metrics) r.body += config.client_metrics->prometheus_text();
  } else if (request.path == "/status" || request.path == "/") {
    r.content_type = "text/html; charset=utf-8";
    r.body = status_page(snapshot, config);
  } else if (request.path == "/connections") {
    if (request.wants_json || request.query == "format=json") {
      r.content_type = "application/json";
      r.body = connections_json(snapshot);
    } else {
      r.body = connections_text(snapshot);
    }
  } else {
    return error_response(404, "try /metrics, /status, /connections or /health");
  }
  return r;
}

std::string connections_text(const metrics::server_snapshot& s) {
  std::string out = "# peer transport bytes_received bytes_sent calls calls_in_flight age_s\n";
  for (const auto& c : s.connections) {
    out += c.peer + " " + std::string(metrics::to_string(c.transport)) + " " +
           std::to_string(c.bytes_received) + " " + std::to_string(c.bytes_sent) + " " +
           std::to_string(c.calls) + " " + std::to_string(c.calls_in_flight) + " " +
           format("%.1f", c.age_seconds) + "\n";
  }
  return out;
}

// Built with nlohmann::json so that every string is escaped, whatever bytes a peer's name
// holds; ordered_json keeps the keys in the order written here.
std::string connections_json(const metrics::server_snapshot& s) {
  auto list = nlohmann::ordered_json::array();
  for (const auto& c : s.connections) {
    list.push_back({{"peer", c.peer},
                    {"transport", metrics::to_string(c.transport)},
                    {"bytes_received", c.bytes_received},
                    {"bytes_sent", c.bytes_sent},
                    {"calls", c.calls},
                    {"calls_in_flight", c.calls_in_flight},
                    // Milliseconds are enough; more digits are noise.
                    {"age_seconds", std::round(c.age_seconds * 1000) / 1000}});
  }
  // Bytes that are not UTF-8 become U+FFFD instead of an exception.
  return list.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string status_page(const metrics::server_snapshot& s, const server_config& config) {
  std::string out;
  out.reserve(8192);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>corvid "
      "status</title>\n<style>body{font-family:sans-serif;margin:1.5em;color:#222}"
      "table{border-collapse:collapse;margin-bottom:1.5em}th,td{border:1px solid #ccc;"
      "padding:.3em .6em;text-align:right}th{background:#eee}td:first-child,th:first-child"
      "{text-align:left;font-family:monospace}.bad{color:#b00}h1{margin-bottom:.2em}"
      ".meta{color:#666}</style></head><body>\n";
  out += "<h1>corvid server</h1>\n<p class=\"meta\" id=\"summary\">";
  out += s.serving ? "serving" : "stopping";
  out += " &middot; up " + format("%.0f", s.uptime_seconds) + " s &middot; listening on " +
         html_escape(config.address) + (s.port != 0 ? ":" + std::to_string(s.port) : "") +
         " &middot; built with " + html_escape(__VERSION__) + " &middot; C++ " +
         std::to_string(__cplusplus) + "</p>\n";
  out +=
      "<h2>Methods</h2>\n<table id=\"methods\"><tr><th>method</th><th>calls</th>"
      "<th>calls/s</th><th>in flight</th><th>errors</th><th>p50</th><th>p99</th>"
      "<th>request bytes</th><th>reply bytes</th></tr>\n";
  for (const auto& m : s.methods) {
    if (m.calls == 0 && m.errors_total() == 0 && m.name == "(none)") continue;
    const double rate = s.uptime_seconds > 0 ? static_cast<double>(m.calls) / s.uptime_seconds : 0;
    std::string errors = std::to_string(m.errors_total());
    for (std::size_t c = 1; c < metrics::errc_count; ++c) {
      if (m.errors[c] != 0) {
        errors += std::string(" ") + std::string(to_string(static_cast<rpc_errc>(c))) + "=" +
                  std::to_string(m.errors[c]);
      }
    }
    out += "<tr class=\"method\" data-method=\"" + html_escape(m.name) + "\"><td>" +
           html_escape(m.name) + "</td><td>" + std::to_string(m.calls) + "</td><td>" +
           format("%.2f", rate) + "</td><td>" + std::to_string(m.in_flight()) + "</td><td" +
           (m.errors_total() != 0 ? " class=\"bad\"" : "") + ">" + html_escape(errors) +
           "</td><td>" + (m.latency_count != 0 ? duration(m.latency_percentile(50)) : "&ndash;") +
           "</td><td>" + (m.latency_count != 0 ? duration(m.latency_percentile(99)) : "&ndash;") +
           "</td><td>" + bytes(m.request_bytes) + "</td><td>" + bytes(m.reply_bytes) +
           "</td></tr>\n";
  }
  out += "</table>\n";

  out += "<h2>Connections (" + std::to_string(s.connections.size()) +
         ")</h2>\n<table id=\"connections\"><tr><th>peer</th><th>transport</th><th>received</th>"
         "<th>sent</th><th>calls</th><th>in flight</th><th>age</th></tr>\n";
  for (const auto& c : s.connections) {
    out += "<tr class=\"connection\" data-peer=\"" + html_escape(c.peer) + "\"><td>" +
           html_escape(c.peer) + "</td><td>" + std::string(metrics::to_string(c.transport)) +
           "</td><td>" + bytes(c.bytes_received) + "</td><td>" + bytes(c.bytes_sent) + "</td><td>" +
           std::to_string(c.calls) + "</td><td>" + std::to_string(c.calls_in_flight) + "</td><td>" +
           format("%.0f s", c.age_seconds) + "</td></tr>\n";
  }
  out += "</table>\n";
  if (s.has_workers) {
    const metrics::worker_row& w = s.workers;
    out +=
        "<h2>Workers</h2>\n<table id=\"workers\"><tr><th>threads</th><th>busy</th>"
        "<th>queued</th><th>queued bytes</th></tr>\n<tr><td>" +
        std::to_string(w.threads) + "</td><td>" + std::to_string(w.busy) + "</td><td>" +
        std::to_string(w.queued) + " of " + std::to_string(w.max_queued) + "</td><td>" +
        bytes(w.queued_bytes) + " of " + bytes(w.max_queued_bytes) + "</td></tr>\n</table>\n";
  }
  out += "<h2>Memory</h2>\n<ul id=\"memory\">";
  memory_list(out, s.memory);
  out += "</ul>\n";
  out += "<h2>Configuration</h2>\n<table id=\"config\"><tr><th>setting</th><th>value</th></tr>";
  auto row = [&](std::string_view k, const std::string& v) {
    out += "<tr><td>" + std::string(k) + "</td><td>" + html_escape(v) + "</td></tr>";
  };
  row("io_threads", std::to_string(config.io_threads));
  row("max_connections",
      config.max_connections == 0 ? "unlimited" : std::to_string(config.max_connections));
  row("max_frame_size", bytes(config.max_frame_size));
  row("max_calls_per_connection", std::to_string(config.max_calls_per_connection));
  row("memory limit", limit(s.memory.limit));
  row("idle_timeout", std::to_string(config.idle_timeout.count()) + " ms");
  row("frame_read_timeout", std::to_string(config.frame_read_timeout.count()) + " ms");
  row("write_timeout", std::to_string(config.write_timeout.count()) + " ms");
  row("metrics", config.metrics ? "on" : "off");
  if (s.has_registry) {
    row("registry", s.registry.url);
    row("registry key", s.registry.key);
    row("registry state",
        s.registry.state + (s.registry.last_error.empty()
                                ? std::string()
                                : " (last error: " + s.registry.last_error + ")"));
  }
  out += "</table>\n";

  out +=
      "<p class=\"meta\">Prometheus metrics: <a href=\"/metrics\">/metrics</a> "
      "&middot; <a href=\"/connections\">/connections</a> &middot; "
      "<a href=\"/health\">/health</a></p>\n</body></html>\n";
  return out;
}

}  // namespace corvid::admin
