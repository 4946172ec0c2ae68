// A fuzz target's inputs replayed without libFuzzer: the normal build links each target's source
// with this main and CTest runs it on the target's seed corpus (tests/CMakeLists.txt,
// fuzz_replay_<target>), so that every seed, and every crash that became one, keeps passing with
// the project's own compiler and, in the sanitizer build, under ASan and UBSan. Arguments: files,
// or directories whose regular files are read in name order. A property that fails aborts, as under
// libFuzzer; a replay that ran no input fails, since it proved nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        if (fs::is_directory(argv[i])) {
            std::vector<fs::path> files;
            for (const auto& e : fs::directory_iterator(argv[i]))
                if (e.is_regular_file()) files.push_back(e.path());
            std::sort(files.begin(), files.end());
            inputs.insert(inputs.end(), files.begin(), files.end());
        } else {
            inputs.emplace_back(argv[i]);
        }
    }
    for (const fs::path& p : inputs) {
        std::ifstream in(p, std::ios::binary);
        if (!in) {
            std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
            return 2;
        }
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::printf("replay: %s (%zu bytes)\n", p.c_str(), bytes.size());
        std::fflush(stdout);  // names the input a crash came from
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    if (inputs.empty()) {
        std::fprintf(stderr, "replay: no input\n");
        return 2;
    }
    std::printf("replay: %zu inputs passed\n", inputs.size());
    return 0;
}
