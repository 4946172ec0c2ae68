#include "systolic/qemu_pci/guest_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace systolic::qemu_pci {

void guest_memory::map(std::vector<sysmem_region> regions) {
    unmap();
    ++m_generation;
    const std::uint64_t page = std::uint64_t(::sysconf(_SC_PAGESIZE));
    for (const sysmem_region& r : regions) {
        const std::uint64_t aligned = std::uint64_t(r.offset) & ~(page - 1);
        const std::uint64_t lead = std::uint64_t(r.offset) - aligned;
        void* base = MAP_FAILED;
        if (r.offset >= 0 && r.size > 0 && r.gpa + r.size > r.gpa)
            base = ::mmap(nullptr, std::size_t(r.size + lead), PROT_READ | PROT_WRITE, MAP_SHARED, r.fd.get(),
                          off_t(aligned));
        if (base == MAP_FAILED) {
            const int err = errno;
            unmap();
            std::ostringstream os;
            os << "cannot map guest RAM at 0x" << std::hex << r.gpa << " (0x" << r.size
               << " bytes at offset 0x" << r.offset << " of fd " << std::dec << r.fd.get()
               << "): " << std::strerror(err);
            throw link_error(os.str());
        }
        m_maps.push_back(
            {r.gpa, r.size, static_cast<std::uint8_t*>(base) + lead, base, std::size_t(r.size + lead)});
    }
    // The fds close with `regions`: the mappings keep the memory.
}

std::uint8_t* guest_memory::find(std::uint64_t gpa, std::uint64_t len) const {
    for (const mapping& m : m_maps)
        if (gpa >= m.gpa && gpa - m.gpa < m.size && m.size - (gpa - m.gpa) >= len)
            return m.host + (gpa - m.gpa);
    return nullptr;
}

bool guest_memory::region_of(std::uint64_t gpa, span& out) const {
    for (const mapping& m : m_maps)
        if (gpa >= m.gpa && gpa - m.gpa < m.size) {
            out = {m.gpa, m.size, m.host};
            return true;
        }
    return false;
}

void guest_memory::unmap() {
    for (const mapping& m : m_maps)
        ::munmap(m.base, m.length);
    m_maps.clear();
}

}  // namespace systolic::qemu_pci
