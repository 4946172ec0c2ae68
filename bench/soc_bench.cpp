#include "soc_bench.h"

#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unicorn/unicorn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>
#include <systemc>
#include <thread>
#include <vector>

#include "elf_loader.h"
#include "hart_loop.h"
#include "io/text.h"
#include "platform.h"

namespace {

using namespace systolic;

// Simulated time per timed run of the hart: 20 ms is 20 M instructions at 1 GHz and CPI 1.
const sc_core::sc_time hart_window(20, sc_core::SC_MS);
// systolic-soc's default --quantum (docs/soc.md), the hart's slice.
const sc_core::sc_time soc_quantum(1, sc_core::SC_US);
// The hart's slice is the global quantum: systolic-soc's while a hart runs, not the other rigs'.
struct soc_quantum_scope {
    sc_core::sc_time others = tlm::tlm_global_quantum::instance().get();
    soc_quantum_scope() { tlm::tlm_global_quantum::instance().set(soc_quantum); }
    ~soc_quantum_scope() { tlm::tlm_global_quantum::instance().set(others); }
};
// Wall time per timed run of Unicorn alone.
constexpr std::uint64_t unicorn_window_us = 200000;

struct rate_tally {
    double seconds = 0, cpu_seconds = 0, instructions = 0, rounds = 0;
    bool ran() const { return seconds > 0; }
    double rate() const { return instructions / seconds; }
    double cpu_rate() const { return instructions / cpu_seconds; }
};

// This thread's CPU time: SystemC runs the hart's thread on it, and Unicorn runs on its caller's.
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// The CPU time of the children that have ended (user and system).
double children_cpu_seconds() {
    rusage r{};
    getrusage(RUSAGE_CHILDREN, &r);
    return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

const char* isa_name(components::isa arch) {
    return arch == components::isa::rv32 ? "rv32" : "rv64";
}

std::uint32_t read_u32(const std::uint8_t* p) {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The hart loop on the whole platform, as systolic-soc builds it. The hart never stops: each timed
// run resumes its thread for hart_window of simulated time and suspends it again.
class hart_rig {
public:
    rate_tally tally;

    hart_rig(components::isa arch, const std::string& elf)
        : m_arch(arch), m_platform((std::string("soc_") + isa_name(arch)).c_str(), platform_config(arch)) {
        m_platform.load(components::read_elf(elf, arch, soc::platform::cpu_ram(arch)));
        // The platform ends the simulation when its hart stops; here a stop is a failure of this
        // rig alone, which the checks report.
        m_platform.cpu.on_stop([] {});
        for (sc_core::sc_object* child : m_platform.cpu.get_child_objects()) {
            sc_core::sc_process_handle h(child);
            if (h.valid() && h.proc_kind() == sc_core::SC_THREAD_PROC_) m_thread = h;
        }
    }

    components::isa arch() const { return m_arch; }
    bool found_thread() const { return m_thread.valid(); }

    // Runs the hart for `window` of simulated time; false if it stopped (a fault).
    bool run(const sc_core::sc_time& window) {
        const soc_quantum_scope quantum;
        m_thread.resume();
        sc_core::sc_start(window);
        m_thread.suspend();
        return !m_platform.cpu.stopped();
    }
    void suspend() { m_thread.suspend(); }

    std::uint64_t retired() const { return m_platform.cpu.retired(); }
    std::uint32_t rounds() {
        std::uint8_t b[4] = {};
        m_platform.ram.core().read(HART_LOOP_ROUNDS_ADDRESS - SOC_RAM_BASE, b, sizeof b);
        return read_u32(b);
    }
    std::string why_stopped() const {
        const auto& f = m_platform.cpu.fault();
        return f ? f->what + " at pc " + io::hex(f->pc) : "the firmware finished";
    }

private:
    static soc::platform::config platform_config(components::isa arch) {
        soc::platform::config c;
        c.arch = arch;
        return c;
    }

    components::isa m_arch;
    soc::platform m_platform;
    sc_core::sc_process_handle m_thread;
};

// The same ELF on Unicorn with nothing else: the RAM mapped from host memory (as the hart maps the
// memory model's), the timer's page answering zeros (the loop arms it once; no interrupt comes) and
// no hook while timed.
class unicorn_alone {
public:
    rate_tally tally;

    unicorn_alone(components::isa arch, const std::string& elf) : m_arch(arch) {
        const components::elf_image image = components::read_elf(elf, arch, soc::platform::cpu_ram(arch));
        void* ram = ::mmap(nullptr, SOC_RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ram == MAP_FAILED) throw std::runtime_error("unicorn_alone: no host memory for the RAM");
        m_ram = static_cast<std::uint8_t*>(ram);
        for (const components::elf_segment& s : image.segments)
            if (s.address >= SOC_RAM_BASE && s.address + s.size <= SOC_RAM_BASE + std::uint64_t{SOC_RAM_SIZE})
                std::memcpy(m_ram + (s.address - SOC_RAM_BASE), s.bytes.data(), s.bytes.size());
        check(
            uc_open(UC_ARCH_RISCV, arch == components::isa::rv32 ? UC_MODE_RISCV32 : UC_MODE_RISCV64, &m_uc),
            "uc_open");
        // The hart's own CPU models (hart_core.cpp): RV32IMAC and RV64IMAC.
        check(uc_ctl_set_cpu_model(m_uc, arch == components::isa::rv32 ? int(UC_CPU_RISCV32_SIFIVE_E31)
                                                                       : int(UC_CPU_RISCV64_SIFIVE_E51)),
              "uc_ctl_set_cpu_model");
        check(uc_mem_map_ptr(m_uc, SOC_RAM_BASE, SOC_RAM_SIZE, UC_PROT_ALL, m_ram), "uc_mem_map_ptr");
        check(uc_mmio_map(m_uc, SOC_TIMER_BASE, SOC_TIMER_SIZE, &zero_read, nullptr, &ignore_write, nullptr),
              "uc_mmio_map");
        m_pc = image.entry;
    }
    ~unicorn_alone() {
        if (m_uc) uc_close(m_uc);
        if (m_ram) ::munmap(m_ram, SOC_RAM_SIZE);
    }
    unicorn_alone(const unicorn_alone&) = delete;
    unicorn_alone& operator=(const unicorn_alone&) = delete;

    components::isa arch() const { return m_arch; }
    std::uint32_t rounds() const { return read_u32(m_ram + (HART_LOOP_ROUNDS_ADDRESS - SOC_RAM_BASE)); }

    // Runs for about `us` microseconds of wall time, then stops where it is. Stopped by a thread of
    // its own that sleeps once: Unicorn's own timeout polls every 100 us from a second thread, which
    // on a busy machine takes turns from the engine's.
    void run_for(std::uint64_t us) {
        std::thread stopper([this, us] {
            std::this_thread::sleep_for(std::chrono::microseconds(us));
            uc_emu_stop(m_uc);
        });
        const uc_err e = uc_emu_start(m_uc, m_pc, 0, 0, 0);
        stopper.join();
        check(e, "uc_emu_start");
        check(uc_reg_read(m_uc, UC_RISCV_REG_PC, &m_pc), "uc_reg_read");
    }

    // Untimed: the instructions from one store of the round counter to the next, counted one by one
    // with a code hook (which is what the timed runs go without).
    std::uint64_t count_round() {
        calibration c;
        uc_hook code, write;
        check(uc_hook_add(m_uc, &code, UC_HOOK_CODE, reinterpret_cast<void*>(&count_instruction), &c, 1, 0),
              "uc_hook_add");
        check(uc_hook_add(m_uc, &write, UC_HOOK_MEM_WRITE, reinterpret_cast<void*>(&round_stored), &c,
                          HART_LOOP_ROUNDS_ADDRESS, HART_LOOP_ROUNDS_ADDRESS + 3),
              "uc_hook_add");
        check(uc_emu_start(m_uc, m_pc, 0, 0, 0), "uc_emu_start");
        check(uc_reg_read(m_uc, UC_RISCV_REG_PC, &m_pc), "uc_reg_read");
        uc_hook_del(m_uc, code);
        uc_hook_del(m_uc, write);
        return c.between;
    }

private:
    struct calibration {
        std::uint64_t count = 0, first = 0, between = 0;
        int stores = 0;
    };
    static void count_instruction(uc_engine*, std::uint64_t, std::uint32_t, void* user) {
        ++static_cast<calibration*>(user)->count;
    }
    static void round_stored(uc_engine* uc, uc_mem_type, std::uint64_t, int, std::int64_t, void* user) {
        auto& c = *static_cast<calibration*>(user);
        if (++c.stores == 1) {
            c.first = c.count;
        } else {
            c.between = c.count - c.first;
            uc_emu_stop(uc);
        }
    }
    static std::uint64_t zero_read(uc_engine*, std::uint64_t, unsigned, void*) { return 0; }
    static void ignore_write(uc_engine*, std::uint64_t, unsigned, std::uint64_t, void*) {}
    static void check(uc_err e, const char* what) {
        if (e != UC_ERR_OK)
            throw std::runtime_error(std::string("unicorn_alone: ") + what + ": " + uc_strerror(e));
    }

    components::isa m_arch;
    std::uint8_t* m_ram = nullptr;
    uc_engine* m_uc = nullptr;
    std::uint64_t m_pc = 0;
};

struct loop_pair {
    std::string elf;
    std::unique_ptr<hart_rig> hart;
    std::unique_ptr<unicorn_alone> alone;
    std::uint64_t per_round = 0;  // instructions, from Unicorn's count
};

std::vector<loop_pair>& loops() {
    static std::vector<loop_pair> v;
    return v;
}

// The GPT-2 layer's two whole runs, in wall seconds and in the child's CPU seconds.
struct process_tally {
    double seconds = 0, cpu_seconds = 0;
    int runs = 0;
    double mean() const { return seconds / runs; }
    double cpu_mean() const { return cpu_seconds / runs; }
};
process_tally gpt2_firmware, gpt2_tb;

// One timed run of the hart; false if it stopped.
bool time_hart(hart_rig& rig) {
    const std::uint64_t i0 = rig.retired();
    const std::uint32_t r0 = rig.rounds();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    if (!rig.run(hart_window)) return false;
    rig.tally.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rig.tally.cpu_seconds += thread_cpu_seconds() - c0;
    rig.tally.instructions += double(rig.retired() - i0);
    rig.tally.rounds += double(rig.rounds() - r0);
    return true;
}

// One timed run of Unicorn alone; its instructions are its rounds times the counted round.
void time_alone(unicorn_alone& uc, std::uint64_t per_round) {
    const std::uint32_t r0 = uc.rounds();
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    uc.run_for(unicorn_window_us);
    uc.tally.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uc.tally.cpu_seconds += thread_cpu_seconds() - c0;
    const double rounds = double(uc.rounds() - r0);
    uc.tally.rounds += rounds;
    uc.tally.instructions += rounds * double(per_round);
}

// The hart and Unicorn alone in turn, each iteration one run of each, so that a machine whose
// speed drifts (other work, a busy sibling thread) slows both alike and the ratio holds.
// The counters are this call's (one repetition's); the tallies, for the summary, every call's.
void bench_hart_beside_unicorn(benchmark::State& state, loop_pair& p) {
    const rate_tally hart0 = p.hart->tally, alone0 = p.alone->tally;
    for (auto _ : state) {
        if (!time_hart(*p.hart)) {
            state.SkipWithError(("the hart stopped: " + p.hart->why_stopped()).c_str());
            break;
        }
        time_alone(*p.alone, p.per_round);
    }
    const rate_tally &hart = p.hart->tally, &alone = p.alone->tally;
    const double h = (hart.instructions - hart0.instructions) / (hart.seconds - hart0.seconds);
    const double a = (alone.instructions - alone0.instructions) / (alone.seconds - alone0.seconds);
    state.counters["hart_instructions_per_s"] = benchmark::Counter(h);
    state.counters["unicorn_alone_instructions_per_s"] = benchmark::Counter(a);
    state.counters["hart_over_unicorn_alone"] = benchmark::Counter(h / a);
}

// One whole run of a command, timed into `t`; empty when it exited 0 with `pass` in its output,
// else what went wrong.
std::string time_process(const std::string& command, const char* pass, process_tally& t) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = children_cpu_seconds();
    std::FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    std::string text;
    char buf[512];
    while (p && std::fgets(buf, sizeof buf, p))
        text += buf;
    const int status = p ? ::pclose(p) : -1;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (status != 0 || text.find(pass) == std::string::npos)
        return command + " failed: " + text.substr(0, 400);
    t.seconds += seconds;
    t.cpu_seconds += children_cpu_seconds() - c0;
    ++t.runs;
    return {};
}

// The layer on systolic-soc and on systolic-tb in turn, each iteration one run of each, as the hart
// beside Unicorn alone.
void bench_gpt2(benchmark::State& state, const std::string& soc, const std::string& tb) {
    const process_tally soc0 = gpt2_firmware, tb0 = gpt2_tb;
    for (auto _ : state) {
        std::string error = time_process(soc, "gpt2_layer: PASS", gpt2_firmware);
        if (error.empty()) error = time_process(tb, "PASS", gpt2_tb);
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            break;
        }
    }
    const double soc_s = (gpt2_firmware.seconds - soc0.seconds) / (gpt2_firmware.runs - soc0.runs);
    const double tb_s = (gpt2_tb.seconds - tb0.seconds) / (gpt2_tb.runs - tb0.runs);
    state.counters["soc_s"] = benchmark::Counter(soc_s);
    state.counters["tb_s"] = benchmark::Counter(tb_s);
    state.counters["soc_over_tb"] = benchmark::Counter(soc_s / tb_s);
}

}  // namespace

void build_soc_rigs() {
    for (auto [arch, elf] : {std::pair{components::isa::rv32, SYSTOLIC_HART_LOOP_RV32},
                             std::pair{components::isa::rv64, SYSTOLIC_HART_LOOP_RV64}}) {
        loop_pair p;
        p.elf = elf;
        p.hart = std::make_unique<hart_rig>(arch, elf);
        p.alone = std::make_unique<unicorn_alone>(arch, elf);
        loops().push_back(std::move(p));
    }
}

bool check_soc_rigs() {
    // sc_start runs every hart at once: all of them go through the check together.
    for (auto& p : loops())
        if (!p.hart->found_thread()) {
            std::cerr << "systolic-bench: soc: the hart's thread was not found\n";
            return false;
        }
    {
        const soc_quantum_scope quantum;
        sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
    }
    for (auto& p : loops()) {
        p.hart->suspend();
        const char* name = isa_name(p.hart->arch());
        if (p.hart->rounds() == 0) {
            std::cerr << "systolic-bench: soc " << name << ": the hart completed no round of the loop ("
                      << p.hart->why_stopped() << ")\n";
            return false;
        }
        // Counted on an engine of its own: the hooks would stay compiled into the timed one's code.
        p.per_round = unicorn_alone(p.hart->arch(), p.elf).count_round();
        // A warm-up that completes a round: on a busy machine the first windows can all go to
        // translating the loop, and a failed start would cost the whole bench, whatever its filter.
        for (int window = 0; window < 20 && p.alone->rounds() == 0; ++window)
            p.alone->run_for(unicorn_window_us / 10);
        if (p.per_round == 0 || p.alone->rounds() == 0) {
            std::cerr << "systolic-bench: soc " << name << ": Unicorn alone did not run the loop\n";
            return false;
        }
    }
    return true;
}

void register_soc_benchmarks() {
    for (auto& p : loops()) {
        loop_pair* pair = &p;
        benchmark::RegisterBenchmark(
            ("soc/hart_beside_unicorn/" + std::string(isa_name(p.hart->arch()))).c_str(),
            [pair](benchmark::State& st) { bench_hart_beside_unicorn(st, *pair); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    const std::string soc = std::string(SYSTOLIC_SOC) + " --isa rv64 --array 128 " + SYSTOLIC_GPT2_LAYER_RV64;
    const std::string tb = std::string(SYSTOLIC_TB) + " --array 128 --m 1024 --k 1600 --p 1600 --dtype int8";
    benchmark::RegisterBenchmark("soc/gpt2_layer_beside_systolic_tb",
                                 [soc, tb](benchmark::State& st) { bench_gpt2(st, soc, tb); })
        ->Unit(benchmark::kSecond)
        ->UseRealTime()
        ->Iterations(1);
}

void print_soc_summary(std::FILE* out) {
    for (const auto& p : loops()) {
        const rate_tally &hart = p.hart->tally, &alone = p.alone->tally;
        if (!hart.ran() && !alone.ran()) continue;
        std::fprintf(out,
                     "hart %s, M instructions per wall second (per CPU second):", isa_name(p.hart->arch()));
        if (hart.ran()) std::fprintf(out, " platform %.1f (%.1f)", hart.rate() / 1e6, hart.cpu_rate() / 1e6);
        if (alone.ran())
            std::fprintf(out, ", Unicorn alone %.1f (%.1f)", alone.rate() / 1e6, alone.cpu_rate() / 1e6);
        if (hart.ran() && alone.ran())
            std::fprintf(out, ", hart / alone %.2f (%.2f)", hart.rate() / alone.rate(),
                         hart.cpu_rate() / alone.cpu_rate());
        std::fprintf(out, "; instructions per round: %llu (Unicorn, counted)",
                     static_cast<unsigned long long>(p.per_round));
        if (hart.rounds > 0)
            std::fprintf(out, ", %.0f (the hart, timer interrupts included)",
                         hart.instructions / hart.rounds);
        std::fprintf(out, "\n");
    }
    if (gpt2_firmware.runs || gpt2_tb.runs) {
        std::fprintf(out, "GPT-2 layer 1024x1600x1600 int8 on 128x128, wall (CPU) seconds:");
        if (gpt2_firmware.runs)
            std::fprintf(out, " firmware on systolic-soc %.2f (%.2f)", gpt2_firmware.mean(),
                         gpt2_firmware.cpu_mean());
        if (gpt2_tb.runs) std::fprintf(out, ", systolic-tb %.2f (%.2f)", gpt2_tb.mean(), gpt2_tb.cpu_mean());
        if (gpt2_firmware.runs && gpt2_tb.runs)
            std::fprintf(out, ", soc / tb %.2f (%.2f)", gpt2_firmware.mean() / gpt2_tb.mean(),
                         gpt2_firmware.cpu_mean() / gpt2_tb.cpu_mean());
        std::fprintf(out, "\n");
    }
    std::fflush(out);
}
