#include "hart.h"

#include <tlm_utils/tlm_quantumkeeper.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "io/text.h"
#include "systolic/log.h"

namespace systolic::components {

namespace {

// The engine's JIT runs on the hart thread's stack, deeper than SystemC's default allows.
constexpr std::size_t thread_stack = std::size_t(8) << 20;

}  // namespace

hart::hart(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      initiator_socket("initiator_socket"),
      irq_external("irq_external"),
      irq_timer("irq_timer"),
      m_cfg(cfg),
      m_core(cfg.arch, *this),
      m_log(get_logger(this->name())),
      m_ps_per_instruction(cfg.cpi * 1e12 / cfg.clock_hz),
      m_ram(cfg.ram.size()) {
    if (!(cfg.clock_hz > 0) || !(cfg.cpi > 0) || !std::isfinite(m_ps_per_instruction))
        throw std::invalid_argument("hart: the clock and the CPI must be positive");
    initiator_socket.register_invalidate_direct_mem_ptr(this, &hart::invalidate_direct_mem_ptr);
    for (const range& d : cfg.devices)
        m_core.map_bus(d.base, d.size);
    SC_THREAD(run);
    set_stack_size(thread_stack);
}

void hart::reset(std::uint64_t entry) {
    m_core.set_pc(entry);
    m_core.set_reg(10, 0);  // a0: the hart's id
    m_core.set_reg(11, 0);
}

void hart::halt() {
    m_halt = true;
    if (m_in_run) m_core.request_stop();
}

void hart::set_trace(observe::trace_file* trace) {
    m_trace = trace ? std::make_unique<hart_trace>(*trace, name()) : nullptr;
}

void hart::finish_trace(const sc_core::sc_time& end) {
    if (m_trace) m_trace->finish(end);
}

void hart::map_ram(std::size_t i) {
    const range& r = m_cfg.ram[i];
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(r.base);
    tlm::tlm_dmi dmi;
    const bool granted = initiator_socket->get_direct_mem_ptr(t, dmi);
    m_ram[i].stale = false;
    m_ram[i].direct = granted && dmi.is_read_write_allowed() && dmi.get_start_address() <= r.base &&
                      dmi.get_end_address() >= r.base + (r.size - 1);
    if (m_ram[i].direct) {
        m_core.map_memory(r.base, r.size, dmi.get_dmi_ptr() + (r.base - dmi.get_start_address()));
    } else {
        m_log->warn("{} at {}: no DMI for the whole range; every access goes over the bus", r.name,
                    io::hex(r.base));
        m_core.map_bus(r.base, r.size);
    }
}

void hart::remap_stale() {
    for (std::size_t i = 0; i < m_ram.size(); ++i)
        if (m_ram[i].stale) {
            m_core.unmap(m_cfg.ram[i].base, m_cfg.ram[i].size);
            map_ram(i);
        }
}

void hart::invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
    bool any = false;
    for (std::size_t i = 0; i < m_ram.size(); ++i) {
        const range& r = m_cfg.ram[i];
        if (m_ram[i].direct && start <= r.base + (r.size - 1) && end >= r.base) {
            m_ram[i].stale = true;
            any = true;
        }
    }
    if (!any) return;
    // Inside a run the engine is using the pointer: it stops after the current block.
    if (m_in_run)
        m_core.request_stop();
    else
        remap_stale();
}

// The instructions that fit in what is left of the global quantum.
std::uint64_t hart::budget() const {
    const sc_core::sc_time left = tlm::tlm_global_quantum::instance().compute_local_quantum();
    const double local = m_keeper.get_local_time().to_seconds() * 1e12;
    const double n = (left.to_seconds() * 1e12 - local) / m_ps_per_instruction;
    return n >= 1 ? std::uint64_t(std::min(n, 1e15)) : 1;
}

// The instructions retired since the last charge, into the quantum keeper.
void hart::charge() {
    const std::uint64_t n = m_core.run_retired() - m_charged;
    m_charged = m_core.run_retired();
    if (n == 0) return;
    m_ps_fraction += double(n) * m_ps_per_instruction;
    const double whole = std::floor(m_ps_fraction);
    m_ps_fraction -= whole;
    m_keeper.inc(sc_core::sc_time(whole, sc_core::SC_PS));
}

std::uint64_t hart::pending() const {
    return std::uint64_t(irq_external.read()) << csr::external_irq | std::uint64_t(irq_timer.read())
                                                                         << csr::timer_irq;
}

bool hart::bus_read(std::uint64_t address, void* data, unsigned length) {
    return transport(tlm::TLM_READ_COMMAND, address, data, length);
}

bool hart::bus_write(std::uint64_t address, const void* data, unsigned length) {
    return transport(tlm::TLM_WRITE_COMMAND, address, const_cast<void*>(data), length);
}

// One access at the CPU's local time: the instructions so far are charged first.
bool hart::transport(tlm::tlm_command cmd, std::uint64_t address, void* data, unsigned length) {
    charge();
    tlm::tlm_generic_payload& t = m_payload;
    t.set_command(cmd);
    t.set_address(address);
    t.set_data_ptr(static_cast<unsigned char*>(data));
    t.set_data_length(length);
    t.set_streaming_width(length);
    t.set_byte_enable_ptr(nullptr);
    t.set_dmi_allowed(false);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = m_keeper.get_local_time();
    const sc_core::sc_time begin = sc_core::sc_time_stamp() + delay;
    initiator_socket->b_transport(t, delay);
    m_keeper.set(delay);
    ++m_accesses;
    if (m_log->should_log(spdlog::level::debug)) m_log->debug("{}", txn_to_string(t));
    if (m_trace) {
        std::uint64_t value = 0;
        std::memcpy(&value, data, std::min<unsigned>(length, sizeof value));
        m_trace->access(cmd == tlm::TLM_WRITE_COMMAND, device_text(address), address, length, value, begin,
                        sc_core::sc_time_stamp() + delay);
    }
    if (m_keeper.need_sync()) m_core.request_stop();
    return t.is_response_ok();
}

std::string hart::device_text(std::uint64_t address) const {
    for (const range& d : m_cfg.devices)
        if (address >= d.base && address - d.base < d.size) {
            const std::uint64_t offset = address - d.base;
            const std::string reg = d.register_name ? d.register_name(offset) : std::string();
            return d.name + " " + (reg.empty() ? "+" + io::hex(offset) : reg);
        }
    for (const range& r : m_cfg.ram)
        if (address >= r.base && address - r.base < r.size) return r.name + " " + io::hex(address);
    return io::hex(address);
}

// Between slices: after a sync, when the CPU's time is the kernel's, or right after an instruction
// that changed mstatus or mie (or an mret), when the CPU may be ahead of the kernel by its local
// time and the lines it reads are the kernel's.
void hart::interrupts() {
    const bool enabled = m_core.mstatus() & csr::mstatus_mie;
    if (m_in_handler && enabled) {  // the handler's mret has set MIE again
        m_in_handler = false;
        if (m_trace) m_trace->interrupt_returned(sc_core::sc_time_stamp() + m_keeper.get_local_time());
    }
    if (!enabled || !m_core.wakes(pending())) return;
    // A line seen high may be one that a device lowers at the CPU's time (the handler's access that
    // cleared its cause), or at this very time a delta cycle later: sync, wait one delta, look again.
    // A line that rises between the kernel's time and the CPU's is taken at the slice's end.
    if (m_keeper.get_local_time() != sc_core::SC_ZERO_TIME) m_keeper.sync();
    sc_core::wait(sc_core::SC_ZERO_TIME);
    const int cause = m_core.take_interrupt(pending());
    if (cause < 0) return;
    ++m_interrupts;
    m_in_handler = true;
    m_log->info("interrupt {} taken, mepc {}", cause, io::hex(m_core.pc()));
    if (m_trace) m_trace->interrupt_taken(unsigned(cause), sc_core::sc_time_stamp());
}

void hart::sleep() {
    const sc_core::sc_time begin = sc_core::sc_time_stamp();
    while (!m_halt && !m_core.wakes(pending()))
        sc_core::wait(irq_external.value_changed_event() | irq_timer.value_changed_event());
    m_keeper.reset();  // the next quantum from now
    m_log->info("wfi: slept {}", (sc_core::sc_time_stamp() - begin).to_string());
    if (m_trace) m_trace->sleep(begin, sc_core::sc_time_stamp());
}

void hart::stop_for_good() {
    m_stopped = true;
    if (m_fault) m_log->info("fault at pc {}: {}", io::hex(m_fault->pc), m_fault->what);
    if (m_on_stop) m_on_stop();
}

void hart::run() {
    register_local_time(&m_keeper);
    m_keeper.reset();
    for (std::size_t i = 0; i < m_ram.size(); ++i)
        map_ram(i);
    while (!m_halt) {
        remap_stale();
        interrupts();
        if (m_core.fault()) {  // an interrupt with no trap handler
            m_fault = m_core.fault();
            m_fault_time = local_time();
            break;
        }
        m_charged = 0;
        m_in_run = true;
        const hart_core::stop why = m_core.run(budget());
        m_in_run = false;
        charge();
        if (why == hart_core::stop::fault) {
            m_fault = m_core.fault();
            m_fault_time = local_time();
            break;
        }
        if (m_halt) break;
        // After a change of mstatus or mie the interrupts are looked at again at once; interrupts()
        // syncs only when one is to be taken, so turning them off or on costs no context switch.
        if (why != hart_core::stop::interrupt_state || m_keeper.need_sync()) m_keeper.sync();
        if (why == hart_core::stop::wfi) sleep();
    }
    m_keeper.sync();
    unregister_local_time(&m_keeper);
    stop_for_good();
    // Suspended rather than returned, as vp/cpu.cpp explains (ASan and a thread that returned).
    sc_core::wait(m_never);
}

}  // namespace systolic::components
