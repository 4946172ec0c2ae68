// What the documentation's C++ snippets may use without declaring it, as a platform around them
// would provide: a bus with a target and an initiator socket, an interrupt signal, a job's shapes
// and addresses. Only declared: the snippets are compiled with -fsyntax-only (tests/doc_snippets.py).
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <cstdint>
#include <systemc>
#include <tlm>

struct doc_bus : sc_core::sc_module {
    tlm_utils::simple_target_socket<doc_bus> target_socket;
    tlm_utils::simple_initiator_socket<doc_bus> initiator_socket;
};
extern doc_bus& bus;
extern sc_core::sc_signal<bool>& irq_signal;
extern std::uint64_t m, k, p;                 // C = A*B: A is m x k, B is k x p
extern std::uint64_t a_base, b_base, c_base;  // where A, B and C are in memory
