// An allocation failure says what was being allocated, never a bare std::bad_alloc: every large
// allocation of an executable runs inside allocating("what", f). SystemC turns an exception that
// escapes a process (the tile controller's thread) into error E549 thrown out of sc_start, so that
// report counts as an allocation failure too when it carries a std::bad_alloc.
#pragma once

#include <new>
#include <string>
#include <systemc>

#include "memory_estimate.h"

namespace systolic::tb {

inline bool is_allocation_failure(const sc_core::sc_report& r) {
    const std::string msg = r.get_msg();
    return msg == std::bad_alloc().what() || msg == std::bad_array_new_length().what();
}

template <class F>
auto allocating(const std::string& what, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        throw out_of_memory(what);
    } catch (const sc_core::sc_report& r) {
        if (is_allocation_failure(r)) throw out_of_memory(what);
        throw;
    }
}

}  // namespace systolic::tb
