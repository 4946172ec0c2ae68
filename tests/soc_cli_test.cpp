// systolic-soc run as a user runs it, on the small firmware of tests/soc_firmware built for both
// ISAs: the UART, the finisher's codes, faults with their pc, the timeout, the timer interrupt and
// wfi, time from instructions and device accesses, the accelerator with its interrupt, the trace and
// the waveform, the accelerator's refusals in the summary, and every bad ELF file and usage (times
// the simulation cannot hold, empty output names) refused with exit status 2.
#include <elf.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "vcd_reader.h"

namespace {

using systolic::tb::testing::cli_fixture;
using systolic::tb::testing::cli_result;
using systolic::tb::testing::slurp;

const std::string k_soc = std::string("exec ") + SYSTOLIC_SOC;

std::string firmware(const std::string& name, const std::string& isa) {
    return std::string(SOC_TEST_FIRMWARE) + "/soc_" + name + "-" + isa + ".elf";
}

// The number after `key=` in `text`.
std::uint64_t value_of(const std::string& text, const std::string& key) {
    const auto at = text.find(key + "=");
    if (at == std::string::npos) throw std::runtime_error("no " + key + "= in: " + text);
    return std::stoull(text.substr(at + key.size() + 1), nullptr, 0);
}

// The summary line: every figure present, no job, failure or violation.
bool is_summary(const std::string& out) {
    const auto at = out.rfind("systolic-soc: ");
    if (at == std::string::npos) return false;
    std::size_t from = at;
    for (const char* part : {" instructions retired, ", " simulated, ", " MIPS, 0 jobs checked, 0 failures, ",
                             " bus transactions checked, 0 protocol violations\n"}) {
        from = out.find(part, from);
        if (from == std::string::npos) return false;
    }
    return true;
}

class SocCli : public cli_fixture, public ::testing::WithParamInterface<const char*> {
protected:
    std::string isa() const { return GetParam(); }
    cli_result soc(const std::string& name, const std::string& args = "") const {
        return run_tool(k_soc, "--isa " + isa() + " " + args + " " + firmware(name, isa()));
    }
};

INSTANTIATE_TEST_SUITE_P(Isa, SocCli, ::testing::Values("rv32", "rv64"),
                         [](const auto& info) { return std::string(info.param); });

TEST_P(SocCli, FirmwarePrintsOverTheUartAndMainsReturnEndsIt) {
    const auto r = soc("hello");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out.rfind("hello from " + isa() + "\n", 0), 0u) << r.out;
    EXPECT_TRUE(is_summary(r.out)) << r.out;
}

TEST_P(SocCli, TheDocsExampleProbesTheAccelerator) {
    const auto r = soc("probe");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.rfind("a 16x16 array, ", 0), 0u) << r.out;
}

TEST_P(SocCli, TheUartWritesToAFile) {
    const auto r = soc("hello", "--uart " + p("uart.txt"));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(path("uart.txt")), "hello from " + isa() + "\n");
    EXPECT_EQ(r.out.find("hello"), std::string::npos) << r.out;
    expect_no_temporaries();
}

TEST_P(SocCli, AFinisherCodeOtherThanZeroIsExitStatusOne) {
    const auto r = soc("exit_code");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(r.err, "systolic-soc: the firmware finished with code 7 (0x7)\n");
}

TEST_P(SocCli, AnUnmappedLoadIsAFaultAtItsPc) {
    const auto r = soc("fault_load");
    EXPECT_EQ(r.status, 3) << r.err;
    const std::uint64_t pc = value_of(r.out, "fault_pc");
    char want[160];
    std::snprintf(want, sizeof want,
                  "systolic-soc: firmware fault at pc 0x%llx: 4-byte load from unmapped address 0x20000010 "
                  "(mcause 0x5, address 0x20000010)\n",
                  static_cast<unsigned long long>(pc));
    EXPECT_EQ(r.err, want);
}

TEST_P(SocCli, AnIllegalInstructionIsAFaultAtItsPc) {
    const auto r = soc("fault_illegal");
    EXPECT_EQ(r.status, 3) << r.err;
    const std::uint64_t pc = value_of(r.out, "fault_pc");
    char want[160];
    std::snprintf(
        want, sizeof want,
        "systolic-soc: firmware fault at pc 0x%llx: illegal instruction 0x0 (mcause 0x2, address 0x%llx)\n",
        static_cast<unsigned long long>(pc), static_cast<unsigned long long>(pc));
    EXPECT_EQ(r.err, want);
}

// The privileged spec's cause for a misaligned AMO, LR or SC is 6, store/AMO address misaligned,
// with the data address (mtval), not the pc.
TEST_P(SocCli, AMisalignedAtomicIsAStoreAmoMisalignedFaultAtItsDataAddress) {
    const auto r = soc("fault_amo");
    EXPECT_EQ(r.status, 3) << r.err;
    const std::uint64_t pc = value_of(r.out, "fault_pc"), address = value_of(r.out, "address");
    char want[200];
    std::snprintf(
        want, sizeof want,
        "systolic-soc: firmware fault at pc 0x%llx: store/AMO address misaligned: 4-byte amoadd.w at "
        "0x%llx (mcause 0x6, address 0x%llx)\n",
        static_cast<unsigned long long>(pc), static_cast<unsigned long long>(address),
        static_cast<unsigned long long>(address));
    EXPECT_EQ(r.err, want);
}

TEST_P(SocCli, AnInterruptWithNoTrapHandlerIsAFault) {
    const auto r = soc("no_handler");
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_NE(r.err.find(": machine timer interrupt with no trap handler (mtvec = 0) (mcause 0x8"),
              std::string::npos)
        << r.err;
}

TEST_P(SocCli, TheTimeoutEndsAFirmwareThatNeverFinishes) {
    const auto r = soc("spin", "--timeout 200us");
    EXPECT_EQ(r.status, 4) << r.err;
    EXPECT_EQ(
        r.err,
        "systolic-soc: timeout: the firmware did not finish within 200 us of simulated time (--timeout)\n");
    EXPECT_NE(r.out.find(" 200 us simulated"), std::string::npos) << r.out;
}

// The timeout holds even when the firmware would finish inside the first quantum (1 us by default):
// the quantum is bounded by the timeout, and a finish later than the timeout is a timeout.
TEST_P(SocCli, AFirmwareThatFinishesAfterTheTimeoutTimesOut) {
    const auto r = soc("hello", "--timeout 1ps");
    EXPECT_EQ(r.status, 4) << r.err << r.out;
    EXPECT_EQ(
        r.err,
        "systolic-soc: timeout: the firmware did not finish within 1.00 ps of simulated time (--timeout)\n");
}

// A quantum longer than the timeout: the hart's slices end at the timeout all the same.
TEST_P(SocCli, TheTimeoutBoundsTheQuantum) {
    const auto r = soc("spin", "--quantum 1000s --timeout 1ms");
    EXPECT_EQ(r.status, 4) << r.err;
    EXPECT_EQ(
        r.err,
        "systolic-soc: timeout: the firmware did not finish within 1.00 ms of simulated time (--timeout)\n");
    EXPECT_NE(r.out.find(" 1.00 ms simulated"), std::string::npos) << r.out;
}

TEST_P(SocCli, TheTimerInterruptWakesWfi) {
    const auto r = soc("timer_irq");
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("ticks=3 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST_P(SocCli, TimeComesFromInstructionsAndDeviceLatency) {
    const auto base = soc("mmio_time");
    ASSERT_EQ(base.status, 0) << base.err;
    const std::uint64_t loop = value_of(base.out, "loop"), uart = value_of(base.out, "uart"),
                        accel = value_of(base.out, "accel");
    constexpr std::uint64_t n = 10000;
    EXPECT_GE(loop, 2 * n) << base.out;  // at least a nop and a branch per iteration, 1 ns each
    EXPECT_LT(loop, 8 * n) << base.out;
    EXPECT_GE(accel, uart + n) << base.out;  // each register read adds the block's 1 ns latency
    // Twice the cycles per instruction, or half the clock: every instruction takes twice as long.
    for (const char* slower : {"--cpi 2", "--cpu-clock 5e8"}) {
        const auto r = soc("mmio_time", slower);
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(value_of(r.out, "loop"), 2 * loop) << slower << "\n" << r.out;
        EXPECT_EQ(value_of(r.out, "uart"), 2 * uart) << slower << "\n" << r.out;
    }
}

TEST_P(SocCli, FirmwareRunsAJobOnTheAcceleratorAndTakesItsInterrupt) {
    const auto r = soc("accel_smoke", "--array 2");
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("array 2, C = [58 64; 139 154] PASS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" 1 jobs checked, 0 failures, "), std::string::npos)
        << r.out;  // the passive checker
}

// --json: the verdict and each job the passive checker checked, with the counters and the
// scoreboard's counts that systolic-tb's report has (the keys of io/job_json.h).
TEST_P(SocCli, TheJsonReportCarriesEachJobsScoreboard) {
    const auto r = soc("accel_smoke", "--array 2 --json " + p("r.json"));
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    const auto j = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_TRUE(j.at("pass").get<bool>());
    EXPECT_EQ(j.at("exit_status"), 0);
    ASSERT_EQ(j.at("jobs").size(), 1u);
    const auto& job = j.at("jobs")[0];
    EXPECT_EQ(job.at("outcome"), "completed");
    EXPECT_EQ(job.at("dtype"), "int32");
    EXPECT_EQ(job.at("m"), 2);
    EXPECT_EQ(job.at("k"), 3);
    EXPECT_EQ(job.at("p"), 2);
    EXPECT_GT(job.at("advance_edges").get<std::uint64_t>(), 0u);
    EXPECT_EQ(job.at("macs_real"), 12);
    const auto& sb = job.at("scoreboard");
    EXPECT_EQ(sb.at("checked"), 4);  // every element of the 2x2 C
    EXPECT_EQ(sb.at("mismatches"), 0);
    EXPECT_EQ(sb.at("writes").get<std::uint64_t>(), 4u);
    EXPECT_EQ(sb.at("missing"), 0);
    EXPECT_TRUE(sb.at("untouched_ok").get<bool>());
    EXPECT_TRUE(sb.at("edges_ok").get<bool>());
    EXPECT_EQ(sb.at("errors"), nlohmann::json::array());
}

// --energy TABLE: the accelerator prices its jobs, and the report gives each job that ran its
// ENERGY (nonzero: a 2x2x3 int32 job at 45 nm costs some pJ); without it, no energy_pj.
TEST_P(SocCli, WithEnergyTheReportGivesEachJobsEnergy) {
    auto r = soc("accel_smoke", "--array 2 --energy horowitz45 --json " + p("r.json"));
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    auto j = nlohmann::json::parse(slurp(path("r.json")));
    ASSERT_EQ(j.at("jobs").size(), 1u);
    EXPECT_GT(j.at("jobs")[0].at("energy_pj").get<std::uint64_t>(), 0u) << j.dump();
    r = soc("accel_smoke", "--array 2 --json " + p("r.json"));
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    j = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_FALSE(j.at("jobs")[0].contains("energy_pj")) << j.dump();
}

// The firmware changes A while its job runs and returns 0: the passive checker fails the job with
// one line, and the run with exit status 1.
TEST_P(SocCli, AJobTheFirmwareSpoilsFailsThePassiveCheck) {
    const auto r = soc("accel_meddle", "--array 2");
    EXPECT_EQ(r.status, 1) << r.err << r.out;
    // "check failed: job 1 (int32 M=2 K=3 P=2, C at 0x8...): what was wrong"
    const auto at = r.out.find("\ncheck failed: job 1 (int32 M=2 K=3 P=2, C at 0x8");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    const auto why = line.find("): ");
    ASSERT_NE(why, std::string::npos) << line;
    EXPECT_GT(line.size(), why + 3) << line;
    EXPECT_NE(r.out.find(" 1 jobs checked, 1 failures, "), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
}

// A job the accelerator refuses: the firmware sees a bare ERROR code, the summary names the job,
// the reason and the code at the default log level. A correct refusal is no failure.
TEST_P(SocCli, ARefusalIsNamedWithItsReasonInTheSummary) {
    const auto r = soc("accel_refused", "--array 2");
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("error 3\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\naccelerator: job 1 (refused: unknown DTYPE 7): ERR_DTYPE\n"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(" 1 jobs checked, 0 failures, "), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
}

TEST_P(SocCli, TheTraceHasTheCpuTrackBesideTheAccelerators) {
    const auto r = soc("accel_smoke", "--array 2 --trace " + p("t.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto trace = nlohmann::json::parse(slurp(path("t.json")));
    std::map<int, std::string> tracks;
    std::map<std::string, int> spans;  // "<track>: <name>" -> count
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name") tracks[e["tid"].get<int>()] = e["args"]["name"];
        if (e["ph"] == "X") ++spans[tracks[e["tid"].get<int>()] + ": " + e["name"].get<std::string>()];
    }
    EXPECT_EQ(spans["soc.cpu: interrupt 11 (external)"], 1);
    EXPECT_EQ(spans["soc.cpu: write accel CTRL"], 1);
    EXPECT_GE(spans["soc.cpu: write accel M"], 1);
    EXPECT_GE(spans["soc.cpu: read accel IRQ_STATUS"], 1);
    EXPECT_GE(spans["soc.cpu: wfi"], 1);
    EXPECT_GE(spans["soc.cpu: write uart TX"], 10);
    EXPECT_GE(spans["soc.accel.ctrl_int32.dma A: read A"], 1);
}

TEST_P(SocCli, TheTimerInterruptsAreOnTheTimelineToo) {
    const auto r = soc("timer_irq", "--trace " + p("t.json"));
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string t = slurp(path("t.json"));
    std::size_t handlers = 0;
    for (auto at = t.find("\"interrupt 7 (timer)\""); at != std::string::npos;
         at = t.find("\"interrupt 7 (timer)\"", at + 1))
        ++handlers;
    EXPECT_EQ(handlers, 3u);
    EXPECT_NE(t.find("\"write timer MTIMECMP"), std::string::npos);
}

// --vcd FILE writes FILE, as in every executable: no extension is added (systolic-soc wrote
// FILE.vcd before the option group was shared).
TEST_P(SocCli, TheWaveformGoesToTheFileNamed) {
    std::filesystem::create_directory(path("out"));
    const auto r = soc("accel_smoke", "--array 2 --vcd out/x.vcd --trace out/t.json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::filesystem::is_regular_file(path("out/x.vcd")));
    EXPECT_FALSE(std::filesystem::exists(path("out/x.vcd.vcd")));
    EXPECT_TRUE(std::filesystem::is_regular_file(path("out/t.json")));
    EXPECT_NE(slurp(path("out/x.vcd")).find("$version\n    systolic-soc\n$end"), std::string::npos);
}

TEST_P(SocCli, TheWaveformHasTheInterruptLines) {
    const auto r = soc("accel_smoke", "--array 2 --vcd " + p("w.vcd"));
    ASSERT_EQ(r.status, 0) << r.err;
    // Read back as GTKWave reads it: through its own vcd2fst and fst2vcd.
    ASSERT_FALSE(std::string(SYSTOLIC_VCD2FST).empty() || std::string(SYSTOLIC_FST2VCD).empty())
        << "vcd2fst/fst2vcd not found when configuring: install gtkwave (scripts/setup)";
    ASSERT_EQ(run_tool(SYSTOLIC_VCD2FST, p("w.vcd") + " " + p("w.fst")).status, 0);
    const auto back = run_tool(SYSTOLIC_FST2VCD, p("w.fst"));
    ASSERT_EQ(back.status, 0) << back.err;
    const auto vcd = systolic::tb::testing::parse_vcd(back.out);
    ASSERT_TRUE(vcd.has("soc.accel_irq"));
    ASSERT_TRUE(vcd.has("soc.timer_irq"));
    const auto& irq = vcd.of("soc.accel_irq");
    ASSERT_EQ(irq.size(), 3u);  // low, raised at the job's end, lowered by the handler's acknowledgement
    EXPECT_EQ(irq[0].value, "0");
    EXPECT_EQ(irq[1].value, "1");
    EXPECT_EQ(irq[2].value, "0");
    // The accelerator applies an acknowledgement at the kernel's time, which the hart, ahead of it
    // by its local offset, may not have left yet: the pulse can have no width.
    EXPECT_GE(irq[2].time, irq[1].time);
    EXPECT_TRUE(vcd.has("soc.accel.ctrl_int32.phase")) << "the accelerator's own signals";
}

// A copy of a good firmware with one field changed, for the loader's refusals.
class SocElf : public cli_fixture {
protected:
    std::string patched(const std::string& isa, const std::function<void(std::string&)>& change) {
        std::string bytes = slurp(firmware("hello", isa));
        change(bytes);
        const std::string out = p("bad-" + isa + ".elf");
        std::ofstream(out, std::ios::binary) << bytes;
        return out;
    }
    void expect_refused_elf(const std::string& isa, const std::string& file, const std::string& needle) {
        expect_refused(run_tool(k_soc, "--isa " + isa + " " + file), needle);
    }
};

template <class T>
void poke(std::string& bytes, std::size_t offset, T value) {
    std::memcpy(&bytes[offset], &value, sizeof value);
}

TEST_F(SocElf, EveryBadFileIsRefusedWithExitStatusTwo) {
    std::ofstream(p("text.elf")) << "not an ELF file\n";
    expect_refused_elf("rv32", p("text.elf"), "text.elf: not an ELF file");
    expect_refused_elf("rv32", p("missing.elf"), "missing.elf");
    expect_refused_elf("rv32", firmware("hello", "rv64"),
                       "not a 32-bit ELF file; --isa rv32 runs RV32 firmware");
    expect_refused_elf("rv64", firmware("hello", "rv32"),
                       "not a 64-bit ELF file; --isa rv64 runs RV64 firmware");
    expect_refused_elf("rv32", SYSTOLIC_SOC, "not a 32-bit ELF file");
    expect_refused_elf("rv64", SYSTOLIC_SOC, "not a RISC-V ELF file (e_machine 62)");
    expect_refused_elf("rv32", patched("rv32", [](std::string& b) { b.resize(40); }), "truncated ELF header");
    expect_refused_elf("rv32", patched("rv32", [](std::string& b) { poke<Elf32_Half>(b, 16, ET_REL); }),
                       "not an executable (e_type 1");
    expect_refused_elf(
        "rv32", patched("rv32", [](std::string& b) { poke<Elf32_Word>(b, 36, EF_RISCV_FLOAT_ABI_DOUBLE); }),
        "built for a hardware floating-point ABI");
    expect_refused_elf("rv32", patched("rv32", [](std::string& b) { poke<Elf32_Addr>(b, 24, 0x10); }),
                       "no entry point: 0x10 is in no executable segment");
    expect_refused_elf("rv64", patched("rv64", [](std::string& b) { poke<Elf64_Addr>(b, 24, 0); }),
                       "no entry point: 0x0 is in no executable segment");
    // The first program header's physical address (all of soc.ld's segments are loadable, or TLS).
    for (const char* isa : {"rv32", "rv64"}) {
        const bool rv64 = std::string(isa) == "rv64";
        const std::string file = patched(isa, [&](std::string& b) {
            for (unsigned i = 0;; ++i) {
                const std::size_t ph = rv64 ? 64 + i * sizeof(Elf64_Phdr) : 52 + i * sizeof(Elf32_Phdr);
                Elf32_Word type;
                std::memcpy(&type, &b[ph], sizeof type);
                if (type != PT_LOAD) continue;
                if (rv64)
                    poke<Elf64_Addr>(b, ph + offsetof(Elf64_Phdr, p_paddr), 0x87fff000);
                else
                    poke<Elf32_Addr>(b, ph + offsetof(Elf32_Phdr, p_paddr), 0x87fff000);
                break;
            }
        });
        expect_refused_elf(isa, file, " does not fit in RAM (ram 0x80000000-0x87ffffff");
    }
}

// The index, p_vaddr and p_paddr offsets of each PT_LOAD program header of an ELF file's bytes.
struct load_header {
    unsigned index;
    std::size_t at;
};
std::vector<load_header> loads(const std::string& b, bool rv64) {
    std::vector<load_header> out;
    const unsigned count = rv64 ? reinterpret_cast<const Elf64_Ehdr*>(b.data())->e_phnum
                                : reinterpret_cast<const Elf32_Ehdr*>(b.data())->e_phnum;
    for (unsigned i = 0; i < count; ++i) {
        const std::size_t ph = rv64 ? 64 + i * sizeof(Elf64_Phdr) : 52 + i * sizeof(Elf32_Phdr);
        Elf32_Word type;
        std::memcpy(&type, &b[ph], sizeof type);
        if (type == PT_LOAD) out.push_back({i, ph});
    }
    return out;
}
void set_address(std::string& b, bool rv64, std::size_t ph, bool virtual_address, std::uint64_t value) {
    if (rv64)
        poke<Elf64_Addr>(
            b, ph + (virtual_address ? offsetof(Elf64_Phdr, p_vaddr) : offsetof(Elf64_Phdr, p_paddr)), value);
    else
        poke<Elf32_Addr>(
            b, ph + (virtual_address ? offsetof(Elf32_Phdr, p_vaddr) : offsetof(Elf32_Phdr, p_paddr)),
            Elf32_Addr(value));
}

// The hart has no MMU and the platform copies nothing: a segment must be linked where it is loaded.
// A code segment loaded in RAM but linked elsewhere (the entry moved with it) would fault at its
// first instruction; it is refused instead.
TEST_F(SocElf, ASegmentLinkedAwayFromWhereItIsLoadedIsRefused) {
    for (const char* isa : {"rv32", "rv64"}) {
        const bool rv64 = std::string(isa) == "rv64";
        unsigned index = 0;
        const std::string file = patched(isa, [&](std::string& b) {
            const load_header code = loads(b, rv64).at(0);
            index = code.index;
            set_address(b, rv64, code.at, true, 0x20000000);
            if (rv64)
                poke<Elf64_Addr>(b, 24, 0x20000000);
            else
                poke<Elf32_Addr>(b, 24, 0x20000000);
        });
        const auto r = run_tool(k_soc, std::string("--isa ") + isa + " " + file);
        expect_refused(r, ": segment " + std::to_string(index) + " at 0x80000000 (");
        EXPECT_NE(r.err.find(" is linked at 0x20000000 (p_vaddr) but loaded at 0x80000000 (p_paddr)"),
                  std::string::npos)
            << r.err;
    }
}

// Two loadable segments over the same bytes: refused, naming both, rather than the later one winning.
TEST_F(SocElf, OverlappingSegmentsAreRefused) {
    for (const char* isa : {"rv32", "rv64"}) {
        const bool rv64 = std::string(isa) == "rv64";
        std::vector<load_header> l;
        const std::string file = patched(isa, [&](std::string& b) {
            l = loads(b, rv64);
            for (bool v : {true, false})
                set_address(b, rv64, l.at(1).at, v, 0x80001000);
        });
        const auto r = run_tool(k_soc, std::string("--isa ") + isa + " " + file);
        expect_refused(r, ": segment " + std::to_string(l.at(1).index) + " at 0x80001000 (");
        EXPECT_NE(r.err.find(" overlaps segment " + std::to_string(l.at(0).index) + " at 0x80000000 ("),
                  std::string::npos)
            << r.err;
    }
}

TEST_F(SocElf, BadUsageIsRefusedWithExitStatusTwo) {
    const std::string fw = firmware("hello", "rv32");
    expect_refused(run_tool(k_soc, ""), "firmware is required");
    expect_refused(run_tool(k_soc, "--isa rv16 " + fw), "--isa");
    expect_refused(run_tool(k_soc, "--cpi 0 " + fw), "--cpi must be above zero");
    expect_refused(run_tool(k_soc, "--cpu-clock -1 " + fw), "--cpu-clock must be a frequency above zero");
    expect_refused(run_tool(k_soc, "--timeout 10 " + fw), "--timeout 10: not a time");
    expect_refused(run_tool(k_soc, "--quantum 0us " + fw), "--quantum 0us: not a time");
    expect_refused(run_tool(k_soc, "--array 0 " + fw), "--array");
    expect_refused(run_tool(k_soc, "--engine fast " + fw), "--engine");
    // The energy group's table is read before anything runs, and its rule holds as in systolic-tb.
    expect_refused(run_tool(k_soc, "--energy no-such-table " + fw), "no-such-table");
    expect_refused(run_tool(k_soc, "--tech-node 7 " + fw), "--tech-node");
    expect_refused(run_tool(k_soc, "--log-level loud " + fw), "--log-level loud: not a log level");
    expect_refused(run_tool(k_soc, "--uart " + fw + " " + fw), "--uart");
    // An empty output name, as every output of every executable (io::output_set).
    expect_refused(run_tool(k_soc, "--uart '' " + fw), "--uart needs a file name, got ''");
    expect_refused(run_tool(k_soc, "--trace '' " + fw), "--trace needs a file name, got ''");
    expect_refused(run_tool(k_soc, "--vcd '' " + fw), "--vcd needs a file name, got ''");
    // Times the simulation cannot hold: an instruction below its 1 ps resolution, or one so long
    // that the hart's time would overflow sc_time.
    expect_refused(run_tool(k_soc, "--cpu-clock 1e30 " + fw),
                   "--cpu-clock 1e+30 Hz at --cpi 1: an instruction would take 1e-18 ps, less than the "
                   "simulation's resolution of 1 ps");
    expect_refused(run_tool(k_soc, "--cpi 1e-30 " + fw),
                   "--cpu-clock 1e+09 Hz at --cpi 1e-30: an instruction would take 1e-27 ps, less than the "
                   "simulation's resolution of 1 ps");
    expect_refused(
        run_tool(k_soc, "--cpu-clock 1e-300 " + fw),
        "--cpu-clock 1e-300 Hz at --cpi 1: an instruction would take inf ps, more than the hour the "
        "simulation allows one");
    expect_refused(
        run_tool(k_soc, "--cpi 1e300 " + fw),
        "--cpu-clock 1e+09 Hz at --cpi 1e+300: an instruction would take inf ps, more than the hour the "
        "simulation allows one");
    expect_refused(
        run_tool(k_soc, "--cpu-clock 1e-4 " + fw),
        "--cpu-clock 0.0001 Hz at --cpi 1: an instruction would take 1e+16 ps, more than the hour the "
        "simulation allows one");
}

}  // namespace
