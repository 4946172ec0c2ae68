// The verification environment for a DUT that runs jobs of every number format on one initiator
// socket (the accelerator's `dma`): one environment per format, chained, over a platform's RAM at
// [ram_base, ram_base + ram_size):
//
//   DUT initiator -> target_socket() [int8 -> int32 -> fp32 -> bf16] initiator_socket() -> RAM or bus
//
// A scoreboard counts writes only while its own job runs, so each job is checked by its format's
// environment alone. Every environment reaches the RAM with debug transport from the chain's end
// (initiator_socket()): the checkers and monitors of the others are for the DUT's transactions, and
// each would copy and compare a window around every debug access of a job's megabytes.
#pragma once

#include <cstdint>
#include <systemc>
#include <tlm>
#include <type_traits>

#include "systolic/number_format.h"
#include "systolic/verify/environment.h"

namespace systolic::verify {

class format_environments : public sc_core::sc_module {
public:
    environment<int8_format> int8;
    environment<int32_format> int32;
    environment<fp32_format> fp32;
    environment<bf16_format> bf16;

    format_environments(const sc_core::sc_module_name& name, std::uint64_t ram_base, std::uint64_t ram_size)
        : sc_core::sc_module(name),
          int8("int8", ram_base, ram_size),
          int32("int32", ram_base, ram_size),
          fp32("fp32", ram_base, ram_size),
          bf16("bf16", ram_base, ram_size) {
        int8.initiator_socket.bind(int32.target_socket);
        int32.initiator_socket.bind(fp32.target_socket);
        fp32.initiator_socket.bind(bf16.target_socket);
        each([this](auto& e) { e.reach_memory_through(initiator_socket()); });
    }

    tlm::tlm_target_socket<>& target_socket() { return int8.target_socket; }           // bind the DUT here
    tlm::tlm_initiator_socket<>& initiator_socket() { return bf16.initiator_socket; }  // to the RAM

    // The DUT's transactions checked: the first protocol checker of the chain sees every one of
    // them and none of the environments' debug accesses.
    std::uint64_t checked() const { return int8.checker.checked(); }

    // f(environment) for each of the four, in the chain's order.
    template <class F>
    void each(F&& f) {
        f(int8);
        f(int32);
        f(fp32);
        f(bf16);
    }

    template <class Format>
    environment<Format>& of() {
        if constexpr (std::is_same_v<Format, int8_format>)
            return int8;
        else if constexpr (std::is_same_v<Format, int32_format>)
            return int32;
        else if constexpr (std::is_same_v<Format, fp32_format>)
            return fp32;
        else
            return bf16;
    }
};

}  // namespace systolic::verify
