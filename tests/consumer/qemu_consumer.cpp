// A user's platform puts its own model behind QEMU with the installed systolic::qemu_pci_device
// (docs/qemu.md): here the model is a register and a DMA port, and QEMU's end of the link closes at
// once (no QEMU is needed to check that the package builds, links and serves), which ends the run.
#include <sys/socket.h>
#include <systolic/qemu_pci/pci_device.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdio>
#include <systemc>

struct model : sc_core::sc_module {
    tlm_utils::simple_target_socket<model> registers{"registers"};
    tlm_utils::simple_initiator_socket<model> dma{"dma"};
    explicit model(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        registers.register_b_transport(this, &model::b_transport);
    }
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

int sc_main(int, char*[]) {
    namespace qp = systolic::qemu_pci;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 1;
    qp::pci_device::config cfg;
    cfg.identity = {0x1234, 0x7e57, 0xff0000};
    qp::pci_device dev("dev", qp::unique_fd(sv[0]), cfg);
    model m("model");
    sc_core::sc_signal<bool> irq("irq");
    dev.bar0.bind(m.registers);
    m.dma.bind(dev.dma);
    dev.irq(irq);
    qp::unique_fd qemu_end(sv[1]);
    qemu_end = qp::unique_fd();  // QEMU is gone
    sc_core::sc_start();
    qp::pci_config probe(cfg.identity, 4096);
    probe.write(qp::reg::bar0, 0xffffffff, 4);
    const bool ok = dev.link_failure().empty() && probe.read(qp::reg::bar0, 4) == 0xfffff000u;
    std::printf("qemu_consumer: link closed, BAR0 mask 0x%x, %s\n", probe.read(qp::reg::bar0, 4),
                ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
