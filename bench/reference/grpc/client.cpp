// gRPC C++ reference client for bench/reference/side-by-side-grpc: keeps C calls to
// corvid_ref.Echo/Call in flight on one channel (one HTTP/2 connection), each finished call
// replaced by the next at once, all driven by one thread on one completion queue (the shape of
// gRPC's examples/cpp/helloworld/greeter_async_client2.cc). After --warmup seconds it measures
// for --duration seconds and prints one line:
//   qps=N p50_us=N p99_us=N calls=N errors=N seconds=N cpu_us_per_call=N
// (cpu: this process, all its threads, getrusage over the measured window).
//   grpc-reference-client --target HOST:PORT --size BYTES --concurrency C
//                         [--duration 3] [--warmup 1] [--reply-size BYTES]
// A reply of another size than expected (--reply-size, default: the request's, an echo) counts
// as an error, so a broken server cannot pass for a fast one.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "echo.grpc.pb.h"
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

namespace {

using clock = std::chrono::steady_clock;

struct settings {
  std::string target;
  long size = 128;
  int concurrency = 1;
  double duration = 3;
  double warmup = 1;
  long reply_size = -1;  // the reply's expected bytes; -1 = an echo of the request
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "grpc-reference-client: %s\nusage: grpc-reference-client --target "
      "HOST:PORT --size BYTES --concurrency C [--duration S] [--warmup S] [--reply-size B]\n",
      why);
  std::exit(2);
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) usage("every option takes a value");
    const char* v = argv[++i];
    if (a == "--target")
      s.target = v;
    else if (a == "--size")
      s.size = std::strtol(v, nullptr, 10);
    else if (a == "--concurrency")
      s.concurrency = static_cast<int>(std::strtol(v, nullptr, 10));
    else if (a == "--duration")
      s.duration = std::strtod(v, nullptr);
    else if (a == "--warmup")
      s.warmup = std::strtod(v, nullptr);
    else if (a == "--reply-size")
      s.reply_size = std::strtol(v, nullptr, 10);
    else
      usage("unknown option");
  }
  if (s.target.empty() || s.size < 0 || s.concurrency < 1 || s.duration <= 0 || s.warmup < 0) {
    usage("--target is required; sizes, concurrency and duration must be positive");
  }
  return s;
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// One of the C calls in flight; a finished call is restarted in the same slot.
struct slot {
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientAsyncResponseReader<corvid_ref::Payload>> reader;
  corvid_ref::Payload reply;
  grpc::Status status;
  clock::time_point started;
};

}  // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(s.target, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    std::fprintf(stderr, "grpc-reference-client: cannot connect to %s\n", s.target.c_str());
    return 1;
  }
  auto stub = corvid_ref::Echo::NewStub(channel);
  corvid_ref::Payload request;
  request.set_data(std::string(static_cast<std::size_t>(s.size), 'q'));
  grpc::CompletionQueue cq;

  std::vector<slot> slots(static_cast<std::size_t>(s.concurrency));
  auto start = [&](slot& sl) {
    sl.ctx = std::make_unique<grpc::ClientContext>();  // a context serves one call only
    sl.started = clock::now();
    sl.reader = stub->PrepareAsyncCall(sl.ctx.get(), request, &cq);
    sl.reader->StartCall();
    sl.reader->Finish(&sl.reply, &sl.status, &sl);
  };
  for (auto& sl : slots) start(sl);

  const auto t0 = clock::now();
  const auto measure_from =
      t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s.warmup));
  const auto measure_to = measure_from + std::chrono::duration_cast<clock::duration>(
                                             std::chrono::duration<double>(s.duration));
  std::vector<float> latencies_us;
  latencies_us.reserve(1 << 20);
  std::uint64_t errors = 0;
  bool measuring = false;
  double cpu0 = 0, cpu1 = 0;
  clock::time_point window_start, window_end;
  bool ended = false;
  int in_flight = s.concurrency;
  void* tag = nullptr;
  bool ok = false;
  std::string first_error;
  while (in_flight > 0 && cq.Next(&tag, &ok)) {
    auto& sl = *static_cast<slot*>(tag);
    const auto now = clock::now();
    if (!measuring && now >= measure_from && now < measure_to) {
      measuring = true;
      cpu0 = cpu_seconds();
      window_start = now;
    }
    if (now >= measure_to) {  // the window is over: let the calls in flight drain
      if (!ended) {
        ended = true;
        cpu1 = cpu_seconds();
        window_end = now;
      }
      --in_flight;
      continue;
    }
    const long want = s.reply_size < 0 ? s.size : s.reply_size;
    if (!ok || !sl.status.ok() || static_cast<long>(sl.reply.data().size()) != want) {
      if (first_error.empty()) {
        first_error = sl.status.ok() ? "reply of " + std::to_string(sl.reply.data().size()) +
                                           " bytes, expected " + std::to_string(want)
                                     : sl.status.error_message();
      }
      if (measuring) ++errors;
    } else if (measuring) {
      latencies_us.push_back(std::chrono::duration<float, std::micro>(now - sl.started).count());
    }
    start(sl);
  }
  const double cpu = cpu1 - cpu0;
  const double seconds = std::chrono::duration<double>(window_end - window_start).count();
  if (!first_error.empty()) std::fprintf(stderr, "first error: %s\n", first_error.c_str());
  const std::size_t n = latencies_us.size();
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    return n == 0 ? 0.0
                  : static_cast<double>(
                        latencies_us[std::min(n - 1, static_cast<std::size_t>(p * n))]);
  };
  std::printf(
      "qps=%.0f p50_us=%.1f p99_us=%.1f calls=%zu errors=%llu seconds=%.3f "
      "cpu_us_per_call=%.2f\n",
      measuring && seconds > 0 ? n / seconds : 0.0, pct(0.50), pct(0.99), n,
      static_cast<unsigned long long>(errors), seconds, n ? cpu * 1e6 / n : 0.0);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return n > 0 ? 0 : 1;
}
