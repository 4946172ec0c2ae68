// GoogleTest checks on TLM response statuses, in the spirit of VCML's EXPECT_OK / EXPECT_AE:
//   EXPECT_TLM_OK(init.write<std::uint32_t>(addr, v));
//   EXPECT_TLM_ADDRESS_ERROR(init.read(addr, v));
// A failure names the statuses ("TLM_ADDRESS_ERROR_RESPONSE"), not their enum values.
#pragma once

#include <gtest/gtest.h>

#include <tlm>

namespace systolic::tb {

inline const char* response_name(tlm::tlm_response_status status) {
    switch (status) {
        case tlm::TLM_OK_RESPONSE:
            return "TLM_OK_RESPONSE";
        case tlm::TLM_INCOMPLETE_RESPONSE:
            return "TLM_INCOMPLETE_RESPONSE";
        case tlm::TLM_GENERIC_ERROR_RESPONSE:
            return "TLM_GENERIC_ERROR_RESPONSE";
        case tlm::TLM_ADDRESS_ERROR_RESPONSE:
            return "TLM_ADDRESS_ERROR_RESPONSE";
        case tlm::TLM_COMMAND_ERROR_RESPONSE:
            return "TLM_COMMAND_ERROR_RESPONSE";
        case tlm::TLM_BURST_ERROR_RESPONSE:
            return "TLM_BURST_ERROR_RESPONSE";
        case tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE:
            return "TLM_BYTE_ENABLE_ERROR_RESPONSE";
    }
    return "unknown tlm_response_status";
}

// Predicate formatter for EXPECT_PRED_FORMAT2 / ASSERT_PRED_FORMAT2.
inline ::testing::AssertionResult tlm_response_is(const char* expected_text, const char* actual_text,
                                                  tlm::tlm_response_status expected,
                                                  tlm::tlm_response_status actual) {
    if (actual == expected) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << actual_text << " returned " << response_name(actual) << ", expected " << response_name(expected)
           << " (" << expected_text << ")";
}

}  // namespace systolic::tb

#define EXPECT_TLM_RESPONSE(expected, expr) \
    EXPECT_PRED_FORMAT2(::systolic::tb::tlm_response_is, expected, expr)
#define ASSERT_TLM_RESPONSE(expected, expr) \
    ASSERT_PRED_FORMAT2(::systolic::tb::tlm_response_is, expected, expr)

#define EXPECT_TLM_OK(expr) EXPECT_TLM_RESPONSE(::tlm::TLM_OK_RESPONSE, expr)
#define ASSERT_TLM_OK(expr) ASSERT_TLM_RESPONSE(::tlm::TLM_OK_RESPONSE, expr)
#define EXPECT_TLM_ADDRESS_ERROR(expr) EXPECT_TLM_RESPONSE(::tlm::TLM_ADDRESS_ERROR_RESPONSE, expr)
#define EXPECT_TLM_BURST_ERROR(expr) EXPECT_TLM_RESPONSE(::tlm::TLM_BURST_ERROR_RESPONSE, expr)
#define EXPECT_TLM_BYTE_ENABLE_ERROR(expr) EXPECT_TLM_RESPONSE(::tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE, expr)
