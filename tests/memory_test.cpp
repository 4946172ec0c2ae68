// Tests of the TLM memory target (systolic::memory): data, latencies, error responses with no side
// effects, debug transport, DMI and its invalidation on resize. One memory and one test_initiator
// are elaborated once per process, in a gtest Environment, and shared by every test; each test
// starts from the same size and a known byte pattern.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <systemc>
#include <tlm>
#include <vector>

#include "systolic/memory.h"
#include "test_initiator.h"
#include "tlm_expect.h"

namespace {

using sc_core::SC_NS;
using sc_core::sc_time;

constexpr std::uint64_t k_base = 0x1000;
constexpr std::uint64_t k_size = 0x1000;
constexpr std::uint64_t k_last = k_base + k_size - 1;
// Functions, not globals: an sc_time with a unit fixes the time resolution when it is built, which
// must not happen during static initialisation.
sc_time read_latency() {
    return sc_time(10, SC_NS);
}
sc_time write_latency() {
    return sc_time(20, SC_NS);
}

struct memory_rig {
    systolic::memory mem;
    systolic::tb::test_initiator init;

    memory_rig() : mem("mem", make_config()), init("init") { init.initiator_socket.bind(mem.target_socket); }

    static systolic::memory::config make_config() {
        systolic::memory::config cfg;
        cfg.base = k_base;
        cfg.size = k_size;
        cfg.read_latency = read_latency();
        cfg.write_latency = write_latency();
        return cfg;
    }
};

memory_rig* g_rig = nullptr;

// Builds the rig on the first SetUp only: with --gtest_repeat and
// --gtest_recreate_environments_when_repeating, SetUp runs again after elaboration has ended, when
// no module may be created. For the same reason TearDown keeps the rig; it goes with the environment
// when GoogleTest deletes it at exit.
class memory_environment : public ::testing::Environment {
public:
    void SetUp() override {
        if (m_rig) return;
        m_rig = std::make_unique<memory_rig>();
        g_rig = m_rig.get();
        sc_core::sc_start(sc_core::SC_ZERO_TIME);  // end of elaboration: the bindings are checked here
    }

private:
    std::unique_ptr<memory_rig> m_rig;
};

[[maybe_unused]] ::testing::Environment* const g_environment =
    ::testing::AddGlobalTestEnvironment(new memory_environment);

class memory_test : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(g_rig, nullptr) << "the memory rig was not elaborated";
        if (mem().core().size() != k_size) mem().resize(k_size);
        // A pattern with no zero bytes, so that a stray write of zeros shows up too.
        std::uint8_t* data = mem().core().data();
        for (std::uint64_t i = 0; i < k_size; ++i)
            data[i] = static_cast<std::uint8_t>(0xa5 ^ (i * 7 + 1));
    }

    static systolic::memory& mem() { return g_rig->mem; }
    static systolic::tb::test_initiator& init() { return g_rig->init; }

    static std::vector<std::uint8_t> snapshot() {
        const std::uint8_t* data = mem().core().data();
        return std::vector<std::uint8_t>(data, data + mem().core().size());
    }
    static std::uint8_t* at(std::uint64_t addr) { return mem().core().data() + (addr - k_base); }
};

// --- Data and timing --------------------------------------------------------------------------

TEST_F(memory_test, socket_names_follow_the_convention) {
    EXPECT_STREQ(init().initiator_socket.basename(), "initiator_socket");
    EXPECT_STREQ(mem().target_socket.basename(), "target_socket");
}

TEST_F(memory_test, write_then_read_round_trips_u8) {
    EXPECT_TLM_OK(init().write<std::uint8_t>(k_base + 3, 0x5c));
    EXPECT_EQ(*at(k_base + 3), 0x5c);
    std::uint8_t value = 0;
    EXPECT_TLM_OK(init().read(k_base + 3, value));
    EXPECT_EQ(value, 0x5c);
}

TEST_F(memory_test, write_then_read_round_trips_u32) {
    const std::uint32_t written = 0xdeadbeef;
    EXPECT_TLM_OK(init().write(k_base + 0x100, written));
    EXPECT_EQ(std::memcmp(at(k_base + 0x100), &written, sizeof written), 0);
    std::uint32_t value = 0;
    EXPECT_TLM_OK(init().read(k_base + 0x100, value));
    EXPECT_EQ(value, written);
}

TEST_F(memory_test, write_then_read_round_trips_u64_unaligned) {
    const std::uint64_t written = 0x0123456789abcdefULL;
    EXPECT_TLM_OK(init().write(k_base + 0x203, written));
    EXPECT_EQ(std::memcmp(at(k_base + 0x203), &written, sizeof written), 0);
    std::uint64_t value = 0;
    EXPECT_TLM_OK(init().read(k_base + 0x203, value));
    EXPECT_EQ(value, written);
}

TEST_F(memory_test, block_accesses_round_trip) {
    std::array<std::uint8_t, 64> out{};
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint8_t>(i + 1);
    EXPECT_TLM_OK(init().write_block(k_base + 0x40, out.data(), out.size()));
    std::array<std::uint8_t, 64> in{};
    EXPECT_TLM_OK(init().read_block(k_base + 0x40, in.data(), in.size()));
    EXPECT_EQ(in, out);
}

TEST_F(memory_test, annotated_delay_is_the_configured_latency) {
    sc_time delay = sc_core::SC_ZERO_TIME;
    EXPECT_TLM_OK(init().write<std::uint32_t>(k_base, 1, &delay));
    EXPECT_EQ(delay, write_latency());

    delay = sc_core::SC_ZERO_TIME;
    std::uint32_t value = 0;
    EXPECT_TLM_OK(init().read(k_base, value, &delay));
    EXPECT_EQ(delay, read_latency());

    // The target adds to the annotation; it does not overwrite it.
    delay = sc_time(5, SC_NS);
    EXPECT_TLM_OK(init().read(k_base, value, &delay));
    EXPECT_EQ(delay, sc_time(5, SC_NS) + read_latency());
    EXPECT_EQ(init().last_delay(), read_latency());

    // Latency does not depend on the length.
    std::array<std::uint8_t, 256> block{};
    delay = sc_core::SC_ZERO_TIME;
    EXPECT_TLM_OK(init().write_block(k_base, block.data(), block.size(), &delay));
    EXPECT_EQ(delay, write_latency());
}

TEST_F(memory_test, ok_responses_allow_dmi) {
    std::uint32_t value = 0;
    EXPECT_TLM_OK(init().read(k_base + 8, value));
    EXPECT_TRUE(init().last_dmi_allowed());
    EXPECT_TLM_OK(init().write(k_base + 8, value));
    EXPECT_TRUE(init().last_dmi_allowed());
}

TEST_F(memory_test, b_transport_counts_transactions) {
    const std::uint64_t before = mem().transactions();
    std::uint8_t value = 0;
    EXPECT_TLM_OK(init().read(k_base, value));
    EXPECT_TLM_ADDRESS_ERROR(init().read(k_base - 1, value));
    EXPECT_EQ(mem().transactions(), before + 2);
}

// --- Address range ----------------------------------------------------------------------------

TEST_F(memory_test, first_and_last_bytes_are_accessible) {
    EXPECT_TLM_OK(init().write<std::uint8_t>(k_base, 0x11));
    EXPECT_TLM_OK(init().write<std::uint8_t>(k_last, 0x22));
    EXPECT_EQ(*at(k_base), 0x11);
    EXPECT_EQ(*at(k_last), 0x22);

    std::uint8_t value = 0;
    EXPECT_TLM_OK(init().read(k_base, value));
    EXPECT_EQ(value, 0x11);
    EXPECT_TLM_OK(init().read(k_last, value));
    EXPECT_EQ(value, 0x22);

    // A multi-byte access that ends exactly on the last byte.
    const std::uint32_t word = 0xcafef00d;
    EXPECT_TLM_OK(init().write(k_last - 3, word));
    std::uint32_t read_back = 0;
    EXPECT_TLM_OK(init().read(k_last - 3, read_back));
    EXPECT_EQ(read_back, word);

    // The whole memory in one access.
    std::vector<std::uint8_t> all(k_size);
    EXPECT_TLM_OK(init().read_block(k_base, all.data(), k_size));
    EXPECT_EQ(all, snapshot());
}

// Addresses where an access of the given length is not wholly inside [k_base, k_last].
struct bad_access {
    const char* what;
    std::uint64_t addr;
    unsigned int len;
};

const bad_access k_bad_accesses[] = {
    {"one byte before the base", k_base - 1, 1},
    {"a word starting one byte before the base", k_base - 1, 4},
    {"address 0", 0, 4},
    {"one past the last byte", k_last + 1, 1},
    {"a word straddling the end", k_last - 1, 4},
    {"a doubleword straddling the end", k_last - 6, 8},
    {"one byte longer than the memory", k_base, static_cast<unsigned int>(k_size + 1)},
    {"far away", 0x8000'0000'0000ULL, 4},
    {"wrapping around the address space", ~std::uint64_t{0} - 1, 4},
};

TEST_F(memory_test, out_of_range_writes_are_address_errors_and_change_nothing) {
    for (const auto& bad : k_bad_accesses) {
        SCOPED_TRACE(bad.what);
        const auto before = snapshot();
        const std::vector<std::uint8_t> data(bad.len, 0x00);
        sc_time delay = sc_core::SC_ZERO_TIME;
        EXPECT_TLM_ADDRESS_ERROR(init().write_block(bad.addr, data.data(), bad.len, &delay));
        EXPECT_FALSE(init().last_dmi_allowed());
        EXPECT_TRUE(snapshot() == before) << "a failed write changed the memory";
    }
}

TEST_F(memory_test, out_of_range_reads_are_address_errors_and_leave_the_buffer_alone) {
    for (const auto& bad : k_bad_accesses) {
        SCOPED_TRACE(bad.what);
        std::vector<std::uint8_t> buffer(bad.len, 0x3c);
        EXPECT_TLM_ADDRESS_ERROR(init().read_block(bad.addr, buffer.data(), bad.len));
        EXPECT_FALSE(init().last_dmi_allowed());
        EXPECT_TRUE(buffer == std::vector<std::uint8_t>(bad.len, 0x3c)) << "a failed read wrote the buffer";
    }
}

TEST_F(memory_test, typed_accesses_report_address_errors) {
    std::uint32_t value = 0x77777777;
    EXPECT_TLM_ADDRESS_ERROR(init().read(k_last - 2, value));
    EXPECT_EQ(value, 0x77777777u);
    const auto before = snapshot();
    EXPECT_TLM_ADDRESS_ERROR(init().write<std::uint64_t>(k_base - 4, 0));
    EXPECT_TRUE(snapshot() == before);
}

// --- Unsupported payload features -------------------------------------------------------------

TEST_F(memory_test, byte_enables_are_rejected_without_effect) {
    std::array<std::uint8_t, 4> data{0, 0, 0, 0};
    std::array<std::uint8_t, 4> enables{0xff, 0xff, 0xff, 0xff};
    const auto before = snapshot();

    for (const auto cmd : {tlm::TLM_WRITE_COMMAND, tlm::TLM_READ_COMMAND}) {
        tlm::tlm_generic_payload trans;
        trans.set_command(cmd);
        trans.set_address(k_base + 0x10);
        trans.set_data_ptr(data.data());
        trans.set_data_length(data.size());
        trans.set_streaming_width(data.size());
        trans.set_byte_enable_ptr(enables.data());
        trans.set_byte_enable_length(enables.size());
        sc_time delay = sc_core::SC_ZERO_TIME;
        EXPECT_TLM_BYTE_ENABLE_ERROR(init().transport(trans, delay));
        EXPECT_FALSE(trans.is_dmi_allowed());
    }
    EXPECT_TRUE(snapshot() == before);
    EXPECT_EQ(data, (std::array<std::uint8_t, 4>{0, 0, 0, 0})) << "a rejected read wrote the buffer";
}

TEST_F(memory_test, streaming_is_rejected_without_effect) {
    std::array<std::uint8_t, 8> data{};
    const auto before = snapshot();

    for (const auto cmd : {tlm::TLM_WRITE_COMMAND, tlm::TLM_READ_COMMAND}) {
        tlm::tlm_generic_payload trans;
        trans.set_command(cmd);
        trans.set_address(k_base + 0x20);
        trans.set_data_ptr(data.data());
        trans.set_data_length(data.size());
        trans.set_streaming_width(4);
        sc_time delay = sc_core::SC_ZERO_TIME;
        EXPECT_TLM_BURST_ERROR(init().transport(trans, delay));
    }
    EXPECT_TRUE(snapshot() == before);
    EXPECT_EQ(data, (std::array<std::uint8_t, 8>{})) << "a rejected read wrote the buffer";
}

TEST_F(memory_test, ignore_command_is_ok_without_effect) {
    std::array<std::uint8_t, 4> data{9, 9, 9, 9};
    const auto before = snapshot();
    tlm::tlm_generic_payload trans;
    trans.set_command(tlm::TLM_IGNORE_COMMAND);
    trans.set_address(k_base + 0x30);
    trans.set_data_ptr(data.data());
    trans.set_data_length(data.size());
    trans.set_streaming_width(data.size());
    sc_time delay = sc_core::SC_ZERO_TIME;
    EXPECT_TLM_OK(init().transport(trans, delay));
    EXPECT_EQ(delay, sc_core::SC_ZERO_TIME) << "nothing was transferred, so nothing takes time";
    EXPECT_TRUE(snapshot() == before);
    EXPECT_EQ(data, (std::array<std::uint8_t, 4>{9, 9, 9, 9}));

    // The address is still checked.
    trans.set_address(k_base + k_size - 2);
    trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    EXPECT_TLM_ADDRESS_ERROR(init().transport(trans, delay));
}

// --- Debug transport --------------------------------------------------------------------------

TEST_F(memory_test, debug_transport_transfers_without_delay) {
    const sc_time now = sc_core::sc_time_stamp();
    const std::uint64_t transactions = mem().transactions();

    const std::array<std::uint8_t, 16> out{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    EXPECT_EQ(init().debug_write(k_base + 0x80, out.data(), out.size()), out.size());
    EXPECT_EQ(std::memcmp(at(k_base + 0x80), out.data(), out.size()), 0);

    std::array<std::uint8_t, 16> in{};
    EXPECT_EQ(init().debug_read(k_base + 0x80, in.data(), in.size()), in.size());
    EXPECT_EQ(in, out);

    // The last byte and the whole memory are reachable too.
    std::uint8_t last = 0;
    EXPECT_EQ(init().debug_read(k_last, &last, 1), 1u);
    EXPECT_EQ(last, *at(k_last));
    std::vector<std::uint8_t> all(k_size);
    EXPECT_EQ(init().debug_read(k_base, all.data(), k_size), k_size);
    EXPECT_EQ(all, snapshot());

    EXPECT_EQ(sc_core::sc_time_stamp(), now);
    EXPECT_EQ(mem().transactions(), transactions) << "debug accesses are not bus transactions";
}

// IEEE 1666: a debug initiator need only set command, address, data pointer and length, so a
// payload with the default streaming width (0) must still work.
TEST_F(memory_test, debug_transport_needs_only_the_minimal_attributes) {
    std::array<std::uint8_t, 4> buffer{};
    tlm::tlm_generic_payload trans;
    trans.set_command(tlm::TLM_READ_COMMAND);
    trans.set_address(k_base + 0x44);
    trans.set_data_ptr(buffer.data());
    trans.set_data_length(buffer.size());
    EXPECT_EQ(init().initiator_socket->transport_dbg(trans), buffer.size());
    EXPECT_EQ(std::memcmp(buffer.data(), at(k_base + 0x44), buffer.size()), 0);

    const std::array<std::uint8_t, 4> out{0xa1, 0xb2, 0xc3, 0xd4};
    trans.set_command(tlm::TLM_WRITE_COMMAND);
    trans.set_data_ptr(const_cast<std::uint8_t*>(out.data()));
    EXPECT_EQ(init().initiator_socket->transport_dbg(trans), out.size());
    EXPECT_EQ(std::memcmp(at(k_base + 0x44), out.data(), out.size()), 0);
}

TEST_F(memory_test, debug_transport_out_of_range_transfers_nothing) {
    for (const auto& bad : k_bad_accesses) {
        SCOPED_TRACE(bad.what);
        const auto before = snapshot();
        const std::vector<std::uint8_t> data(bad.len, 0x00);
        EXPECT_EQ(init().debug_write(bad.addr, data.data(), bad.len), 0u);
        EXPECT_TRUE(snapshot() == before);

        std::vector<std::uint8_t> buffer(bad.len, 0x3c);
        EXPECT_EQ(init().debug_read(bad.addr, buffer.data(), bad.len), 0u);
        EXPECT_TRUE(buffer == std::vector<std::uint8_t>(bad.len, 0x3c));
    }
}

// --- DMI --------------------------------------------------------------------------------------

TEST_F(memory_test, dmi_is_granted_for_the_whole_memory) {
    for (const std::uint64_t addr : {k_base, k_base + 0x123, k_last}) {
        SCOPED_TRACE(addr);
        tlm::tlm_dmi dmi;
        ASSERT_TRUE(init().get_dmi(addr, dmi));
        EXPECT_EQ(dmi.get_start_address(), k_base);
        EXPECT_EQ(dmi.get_end_address(), k_last);
        EXPECT_TRUE(dmi.is_read_write_allowed());
        EXPECT_EQ(dmi.get_read_latency(), read_latency());
        EXPECT_EQ(dmi.get_write_latency(), write_latency());
        EXPECT_EQ(dmi.get_dmi_ptr(), mem().core().data());
    }
}

TEST_F(memory_test, dmi_pointer_aliases_the_contents) {
    tlm::tlm_dmi dmi;
    ASSERT_TRUE(init().get_dmi(k_base + 0x40, dmi));
    unsigned char* const ptr = dmi.get_dmi_ptr();
    const auto offset = [&](std::uint64_t addr) { return addr - dmi.get_start_address(); };

    // Written through DMI, read through b_transport.
    const std::uint32_t via_dmi = 0x600dcafe;
    std::memcpy(ptr + offset(k_base + 0x40), &via_dmi, sizeof via_dmi);
    std::uint32_t value = 0;
    EXPECT_TLM_OK(init().read(k_base + 0x40, value));
    EXPECT_EQ(value, via_dmi);

    // Written through b_transport, read through DMI, at the far end of the region.
    EXPECT_TLM_OK(init().write<std::uint8_t>(k_last, 0xe7));
    EXPECT_EQ(ptr[offset(k_last)], 0xe7);
}

TEST_F(memory_test, dmi_is_denied_outside_with_a_range_that_excludes_the_memory) {
    for (const std::uint64_t addr :
         {std::uint64_t{0}, k_base - 1, k_last + 1, std::uint64_t{0x8000'0000'0000}}) {
        SCOPED_TRACE(addr);
        tlm::tlm_dmi dmi;
        EXPECT_FALSE(init().get_dmi(addr, dmi));
        EXPECT_FALSE(dmi.is_read_allowed());
        EXPECT_FALSE(dmi.is_write_allowed());
        // The denied range is about the requested address and must not cover any of the memory.
        EXPECT_LE(dmi.get_start_address(), addr);
        EXPECT_GE(dmi.get_end_address(), addr);
        const bool overlaps = dmi.get_start_address() <= k_last && dmi.get_end_address() >= k_base;
        EXPECT_FALSE(overlaps) << std::hex << "denied range [0x" << dmi.get_start_address() << ", 0x"
                               << dmi.get_end_address() << "]";
    }
}

// --- Resize -----------------------------------------------------------------------------------

TEST_F(memory_test, resize_invalidates_dmi_and_zeroes_the_contents) {
    tlm::tlm_dmi dmi;
    ASSERT_TRUE(init().get_dmi(k_base, dmi));
    const std::uint64_t invalidations = init().invalidations();

    constexpr std::uint64_t small = 0x800;
    mem().resize(small);
    EXPECT_EQ(init().invalidations(), invalidations + 1);
    EXPECT_LE(init().last_invalidate_start(), dmi.get_start_address());
    EXPECT_GE(init().last_invalidate_end(), dmi.get_end_address());

    EXPECT_EQ(mem().core().size(), small);
    EXPECT_EQ(mem().cfg().size, small);
    std::vector<std::uint8_t> all(small, 0xff);
    EXPECT_TLM_OK(init().read_block(k_base, all.data(), small));
    EXPECT_EQ(all, std::vector<std::uint8_t>(small, 0));

    // The new end is enforced, and a new DMI grant describes the new size.
    std::uint8_t value = 0;
    EXPECT_TLM_OK(init().read(k_base + small - 1, value));
    EXPECT_TLM_ADDRESS_ERROR(init().read(k_base + small, value));
    ASSERT_TRUE(init().get_dmi(k_base, dmi));
    EXPECT_EQ(dmi.get_end_address(), k_base + small - 1);

    // Back to the size the other tests expect; that revokes the new grant too.
    mem().resize(k_size);
    EXPECT_EQ(init().invalidations(), invalidations + 2);
    EXPECT_EQ(mem().core().size(), k_size);
    EXPECT_TLM_OK(init().read(k_last, value));
    EXPECT_EQ(value, 0);
}

}  // namespace
