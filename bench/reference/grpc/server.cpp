// gRPC C++ reference server for bench/reference/side-by-side-grpc: corvid_ref.Echo/Call on an
// asynchronous completion queue, the shape of gRPC's own example
// examples/cpp/helloworld/greeter_async_server.cc (a CallData per call moving through
// CREATE -> PROCESS -> FINISH, a new one requested as each call arrives), with one completion
// queue and one thread per --threads.
//   grpc-reference-server --port N [--threads 1] [--reply-size BYTES]
// Without --reply-size the reply carries the request's bytes back (an echo); with it, a reply
// of that many bytes (the side-by-side's 13-byte reply).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "echo.grpc.pb.h"
#include <grpcpp/grpcpp.h>

namespace {

struct settings {
  int port = 0;
  int threads = 1;
  long reply_size = -1;  // -1 = echo
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "grpc-reference-server: %s\nusage: grpc-reference-server --port N "
               "[--threads N] [--reply-size BYTES]\n",
               why);
  std::exit(2);
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) usage("every option takes a value");
    const long v = std::strtol(argv[++i], nullptr, 10);
    if (a == "--port")
      s.port = static_cast<int>(v);
    else if (a == "--threads")
      s.threads = static_cast<int>(v);
    else if (a == "--reply-size")
      s.reply_size = v;
    else
      usage("unknown option");
  }
  if (s.port <= 0 || s.port > 65535 || s.threads < 1) usage("--port 1..65535 and --threads >= 1");
  return s;
}

// One call's state, as in greeter_async_server.cc.
class call_data {
 public:
  call_data(corvid_ref::Echo::AsyncService* service, grpc::ServerCompletionQueue* cq,
            const std::string* reply)
      : service_(service), cq_(cq), reply_(reply), responder_(&ctx_) {
    service_->RequestCall(&ctx_, &request_, &responder_, cq_, cq_, this);
  }

  void proceed(bool ok) {
    if (state_ == state::finish || !ok) {
      delete this;
      return;
    }
    new call_data(service_, cq_, reply_);  // the next call's slot, before serving this one
    if (reply_ != nullptr) {
      response_.set_data(*reply_);
    } else {
      response_.mutable_data()->swap(*request_.mutable_data());
    }
    state_ = state::finish;
    responder_.Finish(response_, grpc::Status::OK, this);
  }

 private:
  enum class state { process, finish };
  corvid_ref::Echo::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
  const std::string* reply_;
  grpc::ServerContext ctx_;
  corvid_ref::Payload request_;
  corvid_ref::Payload response_;
  grpc::ServerAsyncResponseWriter<corvid_ref::Payload> responder_;
  state state_ = state::process;
};

void serve(corvid_ref::Echo::AsyncService* service, grpc::ServerCompletionQueue* cq,
           const std::string* reply) {
  new call_data(service, cq, reply);
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<call_data*>(tag)->proceed(ok);
}

}  // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  const std::string reply(s.reply_size < 0 ? 0 : static_cast<std::size_t>(s.reply_size), 'r');
  corvid_ref::Echo::AsyncService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("0.0.0.0:" + std::to_string(s.port), grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  // Messages up to 64 MiB either way: the side-by-side sends 1 MiB (gRPC's default cap is 4 MiB).
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs;
  for (int i = 0; i < s.threads; ++i) cqs.push_back(builder.AddCompletionQueue());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "grpc-reference-server: cannot listen on port %d\n", s.port);
    return 1;
  }
  std::fprintf(stderr, "grpc-reference-server: listening on port %d, %d thread(s), %s\n", s.port,
               s.threads, s.reply_size < 0 ? "echo" : "fixed reply");
  std::vector<std::thread> threads;
  for (int i = 1; i < s.threads; ++i) {
    threads.emplace_back(serve, &service, cqs[static_cast<std::size_t>(i)].get(),
                         s.reply_size < 0 ? nullptr : &reply);
  }
  // Runs until killed (SIGTERM/SIGINT end the process; the benchmark never stops it otherwise).
  serve(&service, cqs[0].get(), s.reply_size < 0 ? nullptr : &reply);
  for (auto& t : threads) t.join();
  return 0;
}
