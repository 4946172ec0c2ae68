// The verification environment for a DUT that runs jobs of every number format on one initiator
// socket (the accelerator's `dma`): one environment per format of the model's one list (`formats`,
// number_format.h), named by the format and chained in the list's order, over a platform's RAM at
// [ram_base, ram_base + ram_size):
//
//   DUT initiator -> target_socket() [int8 -> int32 -> fp32 -> bf16] initiator_socket() -> RAM or bus
//
// A scoreboard counts writes only while its own job runs, so each job is checked by its format's
// environment alone. Every environment reaches the RAM with debug transport from the chain's end
// (initiator_socket()): the checkers and monitors of the others are for the DUT's transactions, and
// each would copy and compare a window around every debug access of a job's megabytes. A format
// added to the list gets its environment here without an edit.
#pragma once

#include <cstdint>
#include <memory>
#include <systemc>
#include <tlm>
#include <tuple>
#include <utility>

#include "systolic/number_format.h"
#include "systolic/verify/environment.h"

namespace systolic::verify {

class format_environments : public sc_core::sc_module {
    template <class List>
    struct chain_of;
    template <class... Formats>
    struct chain_of<type_list<Formats...>> {
        using type = std::tuple<std::unique_ptr<environment<Formats>>...>;
    };

public:
    format_environments(const sc_core::sc_module_name& name, std::uint64_t ram_base, std::uint64_t ram_size)
        : sc_core::sc_module(name) {
        for_each_format([&](auto format) {
            using Format = decltype(format);
            std::get<std::unique_ptr<environment<Format>>>(m_chain) =
                std::make_unique<environment<Format>>(Format::name, ram_base, ram_size);
        });
        bind_chain(std::make_index_sequence<formats::size - 1>{});
        each([this](auto& e) { e.reach_memory_through(initiator_socket()); });
    }

    // Newest first, as members would go.
    ~format_environments() override { destroy_from_last(std::make_index_sequence<formats::size>{}); }

    tlm::tlm_target_socket<>& target_socket() { return first().target_socket; }          // bind the DUT here
    tlm::tlm_initiator_socket<>& initiator_socket() { return last().initiator_socket; }  // to the RAM

    // The chain's first environment: its protocol checker sees every transaction of the DUT and none
    // of the environments' debug accesses.
    environment<format_of<dtype(0)>>& first() { return *std::get<0>(m_chain); }
    const environment<format_of<dtype(0)>>& first() const { return *std::get<0>(m_chain); }

    // The DUT's transactions checked, by the first protocol checker of the chain.
    std::uint64_t checked() const { return first().checker.checked(); }

    // f(environment) for each format, in the chain's order.
    template <class F>
    void each(F&& f) {
        std::apply([&](auto&... e) { (f(*e), ...); }, m_chain);
    }

    template <class Format>
    environment<Format>& of() {
        return *std::get<std::unique_ptr<environment<Format>>>(m_chain);
    }

private:
    environment<format_of<dtype(formats::size - 1)>>& last() { return *std::get<formats::size - 1>(m_chain); }
    template <std::size_t... I>
    void bind_chain(std::index_sequence<I...>) {
        (std::get<I>(m_chain)->initiator_socket.bind(std::get<I + 1>(m_chain)->target_socket), ...);
    }

    template <std::size_t... I>
    void destroy_from_last(std::index_sequence<I...>) {
        (std::get<sizeof...(I) - 1 - I>(m_chain).reset(), ...);
    }

    typename chain_of<formats>::type m_chain;
};

}  // namespace systolic::verify
