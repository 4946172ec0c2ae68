// A few RISC-V encodings, enough for the hart's tests to write their programs by hand (no cross
// compiler needed), and a program builder that places them at an address.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace systolic::components::testing {

namespace rv {
enum reg : unsigned {
    zero = 0,
    ra = 1,
    sp = 2,
    gp = 3,
    t0 = 5,
    t1 = 6,
    t2 = 7,
    s0 = 8,
    s1 = 9,
    a0 = 10,
    a1 = 11,
    a2 = 12,
    a3 = 13
};
constexpr std::uint32_t i_type(std::int32_t imm, unsigned rs1, unsigned f3, unsigned rd, unsigned op) {
    return std::uint32_t(imm & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}
constexpr std::uint32_t addi(unsigned rd, unsigned rs1, std::int32_t imm) {
    return i_type(imm, rs1, 0, rd, 0x13);
}
constexpr std::uint32_t lw(unsigned rd, unsigned rs1, std::int32_t imm) {
    return i_type(imm, rs1, 2, rd, 0x03);
}
constexpr std::uint32_t sw(unsigned rs2, unsigned rs1, std::int32_t imm) {
    return std::uint32_t(imm >> 5 & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | 2u << 12 |
           std::uint32_t(imm & 31) << 7 | 0x23;
}
constexpr std::uint32_t lui(unsigned rd, std::uint32_t imm20) {
    return imm20 << 12 | rd << 7 | 0x37;
}
constexpr std::uint32_t auipc(unsigned rd, std::uint32_t imm20) {
    return imm20 << 12 | rd << 7 | 0x17;
}
constexpr std::uint32_t jal(unsigned rd, std::int32_t off) {
    const auto o = std::uint32_t(off);
    return (o >> 20 & 1) << 31 | (o >> 1 & 0x3ff) << 21 | (o >> 11 & 1) << 20 | (o >> 12 & 0xff) << 12 |
           rd << 7 | 0x6f;
}
constexpr std::uint32_t bne(unsigned rs1, unsigned rs2, std::int32_t off) {
    const auto o = std::uint32_t(off);
    return (o >> 12 & 1) << 31 | (o >> 5 & 0x3f) << 25 | rs2 << 20 | rs1 << 15 | 1u << 12 |
           (o >> 1 & 0xf) << 8 | (o >> 11 & 1) << 7 | 0x63;
}
constexpr std::uint32_t csrrw(unsigned rd, unsigned csr, unsigned rs1) {
    return csr << 20 | rs1 << 15 | 1u << 12 | rd << 7 | 0x73;
}
constexpr std::uint32_t csrrs(unsigned rd, unsigned csr, unsigned rs1) {
    return csr << 20 | rs1 << 15 | 2u << 12 | rd << 7 | 0x73;
}
// An AMO, LR or SC (the A extension): funct5 (0 amoadd, 1 amoswap, 2 lr, 3 sc), width funct3
// (2: .w, 3: .d).
constexpr std::uint32_t amo(unsigned funct5, unsigned width, unsigned rd, unsigned rs1, unsigned rs2) {
    return funct5 << 27 | rs2 << 20 | rs1 << 15 | width << 12 | rd << 7 | 0x2f;
}
constexpr unsigned mstatus = 0x300, mie = 0x304, mtvec = 0x305, mepc = 0x341, mcause = 0x342;
constexpr std::uint32_t wfi = 0x10500073, ecall = 0x00000073, ebreak = 0x00100073, mret = 0x30200073;
constexpr std::uint16_t c_nop = 0x0001, c_addi_a0_1 = 0x0505;  // c.addi a0, 1
constexpr std::uint16_t c_lw_a1_a0 = 0x410c;                   // c.lw a1, 0(a0)
constexpr std::uint16_t c_illegal = 0x0000;
}  // namespace rv

class program {
public:
    explicit program(std::uint64_t base) : m_base(base) {}
    std::uint64_t here() const { return m_base + m_bytes.size(); }
    program& op(std::uint32_t insn) {
        put(&insn, 4);
        return *this;
    }
    program& c(std::uint16_t insn) {
        put(&insn, 2);
        return *this;
    }
    // Zero bytes up to `address`.
    program& at(std::uint64_t address) {
        m_bytes.resize(address - m_base, 0);
        return *this;
    }
    void copy_to(std::uint8_t* memory) const { std::memcpy(memory, m_bytes.data(), m_bytes.size()); }

private:
    void put(const void* p, std::size_t n) {
        const auto* b = static_cast<const std::uint8_t*>(p);
        m_bytes.insert(m_bytes.end(), b, b + n);
    }
    std::uint64_t m_base;
    std::vector<std::uint8_t> m_bytes;
};

}  // namespace systolic::components::testing
