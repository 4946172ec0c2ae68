// systolic-qemu's platform (qemu/src/platform.h) against a scripted QEMU, with no guest: BAR0 as
// <systolic/qemu_map.h> and docs/qemu.md declare it (the accelerator's registers, all-ones past
// them, the test-exit register whose first code stands, nothing past BAR0); an int8 job the
// "guest" programs through BAR0 into guest RAM, checked by the passive checker, with its interrupt
// reaching the bridge once; clean, then with a planted defect (--inject), which the guest's C
// cannot show and the checker catches, then clean again.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <systemc>
#include <thread>

#include "doc_table.h"
#include "platform.h"
#include "qemu_tiny_model.h"
#include "scripted_qemu.h"
#include "systolic/accelerator_regs.h"
#include "systolic/qemu_map.h"

namespace {

using namespace systolic;
using qemu_pci::unique_fd;

constexpr std::uint64_t bar = 0xfe000000, ram_gpa = 0x100000;
constexpr std::uint64_t a_at = 0x400, b_at = 0x500, c_at = 0x600;
constexpr int m = 3, k = 5, p = 4;

// One job's C as the guest finds it, with what the platform said of it.
struct job_seen {
    std::uint64_t status = 0;
    std::int32_t c[m * p] = {};
};

// The scripted guest probes BAR0, runs the same int8 job three times with its interrupt enabled
// (clean, with a defect planted, clean again), and writes 5 and then 9 to the test-exit register.
TEST(QemuPlatform, Bar0IsTheMapAndEveryJobIsChecked) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    test::fake_guest_ram guest(1);
    auto* a = reinterpret_cast<std::int8_t*>(guest.bytes + a_at);
    auto* b = reinterpret_cast<std::int8_t*>(guest.bytes + b_at);
    for (int i = 0; i < m * k; ++i)
        a[i] = std::int8_t(i * 7 % 23 - 11);
    for (int i = 0; i < k * p; ++i)
        b[i] = std::int8_t(i * 5 % 19 - 9);
    std::int32_t want[m * p] = {};
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < p; ++j)
            for (int t = 0; t < k; ++t)
                want[i * p + j] += a[i * k + t] * b[t * p + j];

    qemu::platform::config cfg;
    cfg.array_size = 2;  // tiles, and padding at the matrix's edges
    cfg.guest_ram = ram_gpa + 4096;
    qemu::platform chip("qemu", unique_fd(sv[0]), cfg);
    unsigned rising_edges = 0;
    chip.pci.set_interrupt_bridge([&](bool level) { rising_edges += level; });
    test::scripted_qemu q{unique_fd(sv[1])};
    std::uint64_t id = 0, past_block = 0, exit_before = 0, exit_after = 0, past_bar = 0;
    std::vector<std::uint64_t> checked_after;
    job_seen jobs[3];
    std::thread peer([&] {
        q.sync_sysmem(ram_gpa, 4096, guest.fd);
        q.config_write(0x10, std::uint32_t(bar), 4);
        q.config_write(0x04, qemu_pci::command_memory | qemu_pci::command_bus_master, 2);
        id = q.bar_read(bar + SYSTOLIC_REG_ID);
        past_block = q.bar_read(bar + SYSTOLIC_REGS_SIZE);
        const std::pair<std::uint32_t, std::uint64_t> job[] = {
            {SYSTOLIC_REG_M, m},
            {SYSTOLIC_REG_K, k},
            {SYSTOLIC_REG_P, p},
            {SYSTOLIC_REG_DTYPE, SYSTOLIC_DTYPE_INT8},
            {SYSTOLIC_REG_A_ADDR_LO, ram_gpa + a_at},
            {SYSTOLIC_REG_B_ADDR_LO, ram_gpa + b_at},
            {SYSTOLIC_REG_C_ADDR_LO, ram_gpa + c_at},
            {SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_START | SYSTOLIC_CTRL_IRQ_EN}};
        for (job_seen& seen : jobs) {
            // The defect goes in while the simulation waits for this request (time::settle: it
            // has nothing pending), so the socket orders it before the job's start.
            chip.accel.inject(&seen == &jobs[1] ? verify::fault::extra_advance : verify::fault::none);
            std::memset(guest.bytes + c_at, 0, sizeof seen.c);
            for (const auto& [reg, value] : job)
                q.bar_write(bar + reg, value);
            // time::settle: the job is done when the START write is answered.
            seen.status = q.bar_read(bar + SYSTOLIC_REG_STATUS);
            q.bar_write(bar + SYSTOLIC_REG_IRQ_STATUS, SYSTOLIC_IRQ_DONE);
            std::memcpy(seen.c, guest.bytes + c_at, sizeof seen.c);
        }
        exit_before = q.bar_read(bar + SYSTOLIC_QEMU_EXIT_OFFSET);
        q.bar_write(bar + SYSTOLIC_QEMU_EXIT_OFFSET, 5);
        q.bar_write(bar + SYSTOLIC_QEMU_EXIT_OFFSET, 9);
        exit_after = q.bar_read(bar + SYSTOLIC_QEMU_EXIT_OFFSET);
        past_bar = q.bar_read(bar + SYSTOLIC_QEMU_BAR0_SIZE);
        q.hang_up();
    });
    sc_core::sc_start();
    peer.join();
    chip.finish_checks();

    EXPECT_TRUE(q.failures.empty()) << q.failures.front();
    EXPECT_EQ(chip.pci.link_failure(), "");
    EXPECT_EQ(id, SYSTOLIC_ID_MAGIC);
    EXPECT_EQ(past_block, 0xffffffffu) << "past the register block, in the accelerator's page";
    EXPECT_EQ(past_bar, 0xffffffffu);
    // C is right every time: the guest's own check cannot see the defect, which is in the edge count.
    for (const job_seen& seen : jobs) {
        EXPECT_EQ(seen.status, SYSTOLIC_STATUS_DONE);
        for (int i = 0; i < m * p; ++i)
            ASSERT_EQ(seen.c[i], want[i]) << "C element " << i << " of job " << &seen - jobs;
    }
    EXPECT_EQ(rising_edges, 3u) << "one interrupt a job";
    EXPECT_EQ(exit_before, 0u);
    EXPECT_EQ(exit_after, 5u) << "the first code stands";
    EXPECT_EQ(chip.exit_code(), std::optional<std::uint32_t>(5));
    EXPECT_EQ(chip.jobs_checked(), 3u);
    ASSERT_EQ(chip.job_failures().size(), 1u) << "only the job with the defect fails";
    EXPECT_EQ(chip.job_failures()[0].rfind("job 2 ", 0), 0u) << chip.job_failures()[0];
    EXPECT_NE(chip.job_failures()[0].find("edges"), std::string::npos) << chip.job_failures()[0];
    EXPECT_TRUE(chip.protocol_violations().empty()) << chip.protocol_violations().front();
}

TEST(QemuPlatform, TheDocsBar0TableIsTheHeaders) {
    const std::string doc = test::read(QEMU_DOC);
    const struct {
        const char* macro;
        std::uint64_t offset, size;
    } rows[] = {{"SYSTOLIC_QEMU_ACCEL_OFFSET", SYSTOLIC_QEMU_ACCEL_OFFSET, SYSTOLIC_QEMU_ACCEL_SIZE},
                {"SYSTOLIC_QEMU_EXIT_OFFSET", SYSTOLIC_QEMU_EXIT_OFFSET, SYSTOLIC_QEMU_EXIT_SIZE}};
    for (const auto& row : rows) {
        const auto numbers = test::row_numbers(doc, "docs/qemu.md", row.macro);
        ASSERT_GE(numbers.size(), 2u) << row.macro;
        EXPECT_EQ(numbers[0], row.offset) << row.macro;
        EXPECT_EQ(numbers[1], row.size) << row.macro;
    }
    const auto size = test::row_numbers(doc, "docs/qemu.md", "SYSTOLIC_QEMU_BAR0_SIZE");
    ASSERT_GE(size.size(), 2u);
    EXPECT_EQ(size[1], SYSTOLIC_QEMU_BAR0_SIZE);
}

}  // namespace
