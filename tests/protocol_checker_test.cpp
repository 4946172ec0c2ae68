// The TLM-2.0 base-protocol checker (tb/protocol_checker.h): clean traffic to the model's memory
// raises nothing, and every rule, broken on purpose by a misbehaving initiator or target, is caught
// with its own message. Two rigs are elaborated once per process:
//   test_initiator -> protocol_checker -> systolic::memory          (the model's memory)
//   test_initiator -> protocol_checker -> faulty_target             (a target that breaks rules on demand)
#include <gtest/gtest.h>

#include <tlm_utils/simple_target_socket.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "systolic/memory.h"
#include "systolic/memory_core.h"
#include "systolic/verify/protocol_checker.h"
#include "test_initiator.h"
#include "tlm_expect.h"

namespace {

using systolic::tb::test_initiator;
using systolic::verify::protocol_checker;

constexpr std::uint64_t k_base = 0x1000;
constexpr std::uint64_t k_size = 0x400;

// A small memory that follows the protocol until told to break one rule.
class faulty_target : public sc_core::sc_module {
public:
    enum class fault {
        none,
        leave_incomplete,    // b_transport: response status left INCOMPLETE
        change_length,       // b_transport: data length changed
        change_address,      // b_transport: address changed
        modify_write_data,   // b_transport: scribbles over a WRITE's data
        dmi_outside,         // DMI: a range that does not contain the address
        dmi_null_pointer,    // DMI: granted with no pointer
        dmi_read_only,       // DMI: a write request granted read-only
        dmi_inverted,        // DMI: start after end
        dmi_refusal_allows,  // DMI: refused, but the descriptor allows reads
        debug_side_effect,   // transport_dbg: a read changes the byte after it
        debug_too_many,      // transport_dbg: returns more than the length
    };

    tlm_utils::simple_target_socket<faulty_target> target_socket;
    fault planted = fault::none;

    explicit faulty_target(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name),
          target_socket("target_socket"),
          m_core(k_base, k_size),
          m_other(k_base, k_size) {
        target_socket.register_b_transport(this, &faulty_target::b_transport);
        target_socket.register_transport_dbg(this, &faulty_target::transport_dbg);
        target_socket.register_get_direct_mem_ptr(this, &faulty_target::get_direct_mem_ptr);
    }

    // Moves the storage that DMI grants point into, optionally without telling anyone.
    void move_storage(bool invalidate) {
        if (invalidate) target_socket->invalidate_direct_mem_ptr(k_base, k_base + k_size - 1);
        m_moved = !m_moved;
    }
    void invalidate(std::uint64_t start, std::uint64_t end) {
        target_socket->invalidate_direct_mem_ptr(start, end);
    }
    systolic::memory_core& core() { return m_moved ? m_other : m_core; }

private:
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
        const auto status = t.is_read()
                                ? core().read(t.get_address(), t.get_data_ptr(), t.get_data_length())
                                : core().write(t.get_address(), t.get_data_ptr(), t.get_data_length());
        t.set_response_status(status == systolic::memory_core::status::ok ? tlm::TLM_OK_RESPONSE
                                                                          : tlm::TLM_ADDRESS_ERROR_RESPONSE);
        if (planted == fault::leave_incomplete) t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        if (planted == fault::change_length) t.set_data_length(t.get_data_length() - 1);
        if (planted == fault::change_address) t.set_address(t.get_address() + 4);
        if (planted == fault::modify_write_data && t.is_write()) t.get_data_ptr()[0] ^= 0xff;
    }
    unsigned int transport_dbg(tlm::tlm_generic_payload& t) {
        const unsigned int len = t.get_data_length();
        if (t.is_read()) core().read(t.get_address(), t.get_data_ptr(), len);
        if (t.is_write()) core().write(t.get_address(), t.get_data_ptr(), len);
        if (planted == fault::debug_side_effect) core().data()[t.get_address() - k_base + len] ^= 0x5a;
        return planted == fault::debug_too_many ? len + 1 : len;
    }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
        dmi.set_dmi_ptr(core().data());
        dmi.set_start_address(k_base);
        dmi.set_end_address(k_base + k_size - 1);
        dmi.allow_read_write();
        switch (planted) {
            case fault::dmi_outside:
                dmi.set_start_address(t.get_address() + 1);
                dmi.set_dmi_ptr(core().data() + (t.get_address() + 1 - k_base));
                break;
            case fault::dmi_null_pointer:
                dmi.set_dmi_ptr(nullptr);
                break;
            case fault::dmi_read_only:
                dmi.allow_read();
                break;
            case fault::dmi_inverted:
                dmi.set_start_address(k_base + k_size - 1);
                dmi.set_end_address(k_base);
                break;
            case fault::dmi_refusal_allows:
                return false;
            default:
                break;
        }
        return true;
    }

    systolic::memory_core m_core;
    systolic::memory_core m_other;
    bool m_moved = false;
};

struct rigs {
    test_initiator clean_init{"clean_init"};
    protocol_checker clean_checker{"clean_checker"};
    systolic::memory mem;
    test_initiator faulty_init{"faulty_init"};
    protocol_checker faulty_checker{"faulty_checker"};
    faulty_target faulty{"faulty"};

    rigs() : mem("mem", make_config()) {
        clean_init.initiator_socket.bind(clean_checker.target_socket);
        clean_checker.initiator_socket.bind(mem.target_socket);
        faulty_init.initiator_socket.bind(faulty_checker.target_socket);
        faulty_checker.initiator_socket.bind(faulty.target_socket);
    }
    static systolic::memory::config make_config() {
        systolic::memory::config cfg;
        cfg.base = k_base;
        cfg.size = k_size;
        return cfg;
    }
};

rigs* g_rigs = nullptr;

class rigs_environment : public ::testing::Environment {
public:
    void SetUp() override {
        if (m_rigs) return;
        m_rigs = std::make_unique<rigs>();
        g_rigs = m_rigs.get();
        sc_core::sc_start(sc_core::SC_ZERO_TIME);
    }

private:
    std::unique_ptr<rigs> m_rigs;
};

[[maybe_unused]] ::testing::Environment* const g_environment =
    ::testing::AddGlobalTestEnvironment(new rigs_environment);

// Violations are collected here instead of raised as SystemC errors (which fail the test).
class ProtocolChecker : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(g_rigs, nullptr);
        for (protocol_checker* c : {&g_rigs->clean_checker, &g_rigs->faulty_checker}) {
            c->clear_violations();
            c->on_violation([](const std::string&) {});
        }
        g_rigs->faulty.planted = faulty_target::fault::none;
        g_rigs->mem.resize(k_size);
    }
    static test_initiator& init() { return g_rigs->clean_init; }
    static protocol_checker& checker() { return g_rigs->clean_checker; }
    static test_initiator& finit() { return g_rigs->faulty_init; }
    static protocol_checker& fchecker() { return g_rigs->faulty_checker; }
    static faulty_target& faulty() { return g_rigs->faulty; }

    // Exactly one violation, containing `needle`.
    static void expect_one(const protocol_checker& c, const std::string& needle) {
        ASSERT_EQ(c.violations().size(), 1u) << (c.violations().empty() ? "none" : c.violations()[0]);
        EXPECT_NE(c.violations()[0].find(needle), std::string::npos) << c.violations()[0];
    }

    static void setup(tlm::tlm_generic_payload& t, tlm::tlm_command cmd, std::uint64_t addr,
                      unsigned char* data, unsigned int len) {
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(data);
        t.set_data_length(len);
        t.set_streaming_width(len);
        t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    }
};

// --- Clean traffic: nothing to report, and it really was checked ----------------------------------

TEST_F(ProtocolChecker, CleanTrafficToTheModelMemoryRaisesNothing) {
    checker().on_violation([](const std::string& v) { ADD_FAILURE() << v; });
    const std::uint64_t before = checker().checked();
    std::uint32_t v = 0;
    EXPECT_TLM_OK(init().write<std::uint32_t>(k_base + 8, 0xdeadbeef));
    EXPECT_TLM_OK(init().read(k_base + 8, v));
    EXPECT_EQ(v, 0xdeadbeefu);
    EXPECT_TLM_ADDRESS_ERROR(init().read(k_base + k_size, v));  // an error response is not a violation
    std::array<unsigned char, 16> buf{};
    EXPECT_EQ(init().debug_read(k_base, buf.data(), 16), 16u);
    EXPECT_EQ(init().debug_write(k_base + 32, buf.data(), 16), 16u);
    tlm::tlm_dmi dmi;
    EXPECT_TRUE(init().get_dmi(k_base + 4, dmi));
    EXPECT_FALSE(init().get_dmi(0, dmi));
    g_rigs->mem.resize(k_size);  // invalidates, then hands out new storage
    EXPECT_TRUE(init().get_dmi(k_base + 4, dmi, tlm::TLM_WRITE_COMMAND));
    EXPECT_TRUE(checker().violations().empty());
    EXPECT_GE(checker().checked() - before, 9u);
}

TEST_F(ProtocolChecker, InvalidationReachesTheInitiator) {
    tlm::tlm_dmi dmi;
    ASSERT_TRUE(init().get_dmi(k_base, dmi));
    const auto seen = init().invalidations();
    g_rigs->mem.resize(k_size);
    EXPECT_EQ(init().invalidations(), seen + 1);
    EXPECT_LE(init().last_invalidate_start(), k_base);
    EXPECT_GE(init().last_invalidate_end(), k_base + k_size - 1);
    EXPECT_TRUE(checker().violations().empty());
}

TEST_F(ProtocolChecker, DefaultHandlerRaisesASystemCError) {
    checker().on_violation(nullptr);
    bool thrown = false;
    const auto old = sc_core::sc_report_handler::set_handler(
        [](const sc_core::sc_report& r, const sc_core::sc_actions&) { throw r; });
    try {
        tlm::tlm_generic_payload t;
        setup(t, tlm::TLM_READ_COMMAND, k_base, nullptr, 4);
        sc_core::sc_time d = sc_core::SC_ZERO_TIME;
        init().initiator_socket->b_transport(t, d);
    } catch (const sc_core::sc_report& r) {
        thrown = std::string(r.get_msg_type()) == "systolic/protocol_checker";
    }
    sc_core::sc_report_handler::set_handler(old);
    EXPECT_TRUE(thrown);
}

// --- The initiator's rules -------------------------------------------------------------------------

TEST_F(ProtocolChecker, ResponseStatusNotReset) {
    std::uint32_t v = 0;
    tlm::tlm_generic_payload t;
    setup(t, tlm::TLM_READ_COMMAND, k_base, reinterpret_cast<unsigned char*>(&v), 4);
    t.set_response_status(tlm::TLM_OK_RESPONSE);
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    init().initiator_socket->b_transport(t, d);  // not through test_initiator, which resets it
    expect_one(checker(), "must set the response status to TLM_INCOMPLETE_RESPONSE");
    EXPECT_EQ(t.get_response_status(), tlm::TLM_GENERIC_ERROR_RESPONSE);  // not forwarded
}

TEST_F(ProtocolChecker, BadPayloadsFromTheInitiator) {
    std::array<unsigned char, 8> data{};
    struct planted {
        const char* what;
        void (*spoil)(tlm::tlm_generic_payload&);
        const char* message;
    };
    static std::array<unsigned char, 4> be_zero_len{0xff, 0xff, 0xff, 0xff};
    static std::array<unsigned char, 4> be_odd{0xff, 0x0f, 0xff, 0xff};
    for (const planted& p : {
             // 3: inside the enum's range (so no undefined load), but no command.
             planted{"command", [](tlm::tlm_generic_payload& t) { t.set_command(tlm::tlm_command(3)); },
                     "command 3 is not READ, WRITE or IGNORE"},
             planted{"null data", [](tlm::tlm_generic_payload& t) { t.set_data_ptr(nullptr); },
                     "null data pointer"},
             planted{"zero length", [](tlm::tlm_generic_payload& t) { t.set_data_length(0); },
                     "data length 0"},
             planted{"zero streaming width", [](tlm::tlm_generic_payload& t) { t.set_streaming_width(0); },
                     "streaming width 0"},
             planted{"byte enables without length",
                     [](tlm::tlm_generic_payload& t) {
                         t.set_byte_enable_ptr(be_zero_len.data());
                         t.set_byte_enable_length(0);
                     },
                     "byte-enable length of 0"},
             planted{"byte enable value",
                     [](tlm::tlm_generic_payload& t) {
                         t.set_byte_enable_ptr(be_odd.data());
                         t.set_byte_enable_length(4);
                     },
                     "byte enable 1 is 0xf"},
             planted{"DMI hint preset", [](tlm::tlm_generic_payload& t) { t.set_dmi_allowed(true); },
                     "DMI hint to false"},
         }) {
        SCOPED_TRACE(p.what);
        checker().clear_violations();
        tlm::tlm_generic_payload t;
        setup(t, tlm::TLM_WRITE_COMMAND, k_base, data.data(), 4);
        p.spoil(t);
        sc_core::sc_time d = sc_core::SC_ZERO_TIME;
        init().initiator_socket->b_transport(t, d);
        expect_one(checker(), p.message);
    }
}

TEST_F(ProtocolChecker, DmiRequestWithIgnoreCommand) {
    tlm::tlm_dmi dmi;
    EXPECT_FALSE(init().get_dmi(k_base, dmi, tlm::TLM_IGNORE_COMMAND));
    expect_one(checker(), "get_direct_mem_ptr: command 2 is not READ or WRITE");
}

TEST_F(ProtocolChecker, DebugWithNullData) {
    tlm::tlm_generic_payload t;
    setup(t, tlm::TLM_READ_COMMAND, k_base, nullptr, 4);
    EXPECT_EQ(init().initiator_socket->transport_dbg(t), 0u);
    expect_one(checker(), "transport_dbg: null data pointer");
}

// --- The target's rules ----------------------------------------------------------------------------

TEST_F(ProtocolChecker, BTransportTargetFaults) {
    using f = faulty_target::fault;
    struct planted {
        f fault;
        const char* message;
    };
    for (const planted& p : {planted{f::leave_incomplete, "left the response status TLM_INCOMPLETE_RESPONSE"},
                             planted{f::change_length, "changed the data length from 4"},
                             planted{f::change_address, "changed the address from 0x1010"},
                             planted{f::modify_write_data, "modified the data of a WRITE"}}) {
        SCOPED_TRACE(p.message);
        fchecker().clear_violations();
        faulty().planted = p.fault;
        EXPECT_EQ(finit().write<std::uint32_t>(k_base + 0x10, 0x01020304) == tlm::TLM_OK_RESPONSE,
                  p.fault != f::leave_incomplete);
        faulty().planted = f::none;
        expect_one(fchecker(), p.message);
    }
    std::uint32_t v = 0;
    EXPECT_TLM_OK(finit().read(k_base + 0x10, v));  // and a well-behaved access again raises nothing
    EXPECT_EQ(fchecker().violations().size(), 1u);
}

TEST_F(ProtocolChecker, DmiGrantFaults) {
    using f = faulty_target::fault;
    struct planted {
        f fault;
        tlm::tlm_command cmd;
        const char* message;
    };
    for (const planted& p :
         {planted{f::dmi_outside, tlm::TLM_READ_COMMAND, "does not contain the requested address"},
          planted{f::dmi_null_pointer, tlm::TLM_READ_COMMAND, "granted with a null pointer"},
          planted{f::dmi_read_only, tlm::TLM_WRITE_COMMAND, "does not allow writes"},
          planted{f::dmi_refusal_allows, tlm::TLM_READ_COMMAND, "refused, but the descriptor allows"}}) {
        SCOPED_TRACE(p.message);
        faulty().move_storage(true);  // forget earlier grants
        fchecker().clear_violations();
        faulty().planted = p.fault;
        tlm::tlm_dmi dmi;
        finit().get_dmi(k_base + 0x20, dmi, p.cmd);
        faulty().planted = f::none;
        expect_one(fchecker(), p.message);
    }
    fchecker().clear_violations();
    faulty().planted = f::dmi_inverted;
    tlm::tlm_dmi dmi;
    finit().get_dmi(k_base + 0x20, dmi);
    faulty().planted = f::none;
    ASSERT_FALSE(fchecker().violations().empty());
    EXPECT_NE(fchecker().violations()[0].find("start after end"), std::string::npos)
        << fchecker().violations()[0];
}

TEST_F(ProtocolChecker, StorageMovedWithoutInvalidation) {
    tlm::tlm_dmi dmi;
    faulty().move_storage(true);
    ASSERT_TRUE(finit().get_dmi(k_base, dmi));
    faulty().move_storage(true);  // honoured: invalidated first, so a new mapping is fine
    ASSERT_TRUE(finit().get_dmi(k_base, dmi));
    EXPECT_TRUE(fchecker().violations().empty());
    faulty().move_storage(false);  // the planted violation: the old pointer silently goes stale
    ASSERT_TRUE(finit().get_dmi(k_base, dmi));
    expect_one(fchecker(), "to other memory than its live grant, without invalidate_direct_mem_ptr");
}

TEST_F(ProtocolChecker, InvertedInvalidation) {
    faulty().invalidate(k_base + 8, k_base);
    expect_one(fchecker(), "invalidate_direct_mem_ptr: start 0x1008 after end 0x1000");
}

TEST_F(ProtocolChecker, DebugSideEffectIsCaught) {
    faulty().move_storage(true);
    std::array<unsigned char, 8> buf{};
    EXPECT_EQ(finit().debug_read(k_base + 0x40, buf.data(), 8), 8u);
    EXPECT_TRUE(fchecker().violations().empty());
    faulty().planted = faulty_target::fault::debug_side_effect;
    finit().debug_read(k_base + 0x40, buf.data(), 8);
    faulty().planted = faulty_target::fault::none;
    expect_one(fchecker(), "side effect: the byte at 0x1048 changed during a debug read");
}

TEST_F(ProtocolChecker, DebugReturningTooMuch) {
    std::array<unsigned char, 8> buf{};
    faulty().planted = faulty_target::fault::debug_too_many;
    finit().debug_read(k_base, buf.data(), 8);
    faulty().planted = faulty_target::fault::none;
    expect_one(fchecker(), "returned 9 bytes for a length of 8");
}

}  // namespace
