// Replays fuzz inputs through a fuzzer's LLVMFuzzerTestOneInput without libFuzzer, so the
// normal presets (g++; dev, asan, tsan) run every committed seed and every saved crash input
// as a regression test (fuzz/CMakeLists.txt registers one ctest per fuzzer).
//   <target>_replay <file or directory>...
// Directories are read recursively, in name order so a failure is reproducible; README* files
// and dot files (.gitkeep) are not inputs. Each input's name is printed before it runs, so an
// abort or a sanitizer report names the input. Exits 1 if no input was found (a renamed corpus
// directory must not turn the test into a silent pass).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Defined only by the fuzzers that set up shared state (a server, a listener) once.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

bool is_input(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name.front() != '.' && !name.starts_with("README");
}

// Appends the inputs under `root` (or `root` itself), sorted by path.
bool collect(const fs::path& root, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    out.push_back(root);
    return true;
  }
  if (!fs::is_directory(root, ec)) return false;
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(root, ec)) {
    if (e.is_regular_file() && is_input(e.path())) found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return !ec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <file or directory>...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], inputs)) std::printf("replay: %s: not found, skipped\n", argv[i]);
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  for (const auto& p : inputs) {
    std::printf("replay: %s\n", p.c_str());
    std::fflush(stdout);  // named even if the input aborts the process
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    // A copy of exactly the input's size, as libFuzzer passes it: ASan sees a read past the end.
    const auto data = std::make_unique<std::uint8_t[]>(bytes.size());
    std::copy(bytes.begin(), bytes.end(), data.get());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
  }
  std::printf("replay: %zu inputs, all passed\n", inputs.size());
  return 0;
}
