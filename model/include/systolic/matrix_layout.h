// Where a row-major matrix lives in the memory map: base address, shape, element size and the
// row stride in bytes (at least cols x element size; any excess is padding that is not the matrix).
#pragma once

#include <cstdint>
#include <optional>

namespace systolic {

// A half-open byte range [base, end) of the 64-bit address space. The end is held in 128 bits, so
// a range may end exactly at 2^64, and one that runs past it is seen instead of wrapping to a small
// address. The one place where address ranges are compared: the model's job checks and the
// accelerator's register decoding both use it.
struct address_range {
    using wide = unsigned __int128;
    static constexpr wide top = wide{1} << 64;  // one past the last address

    std::uint64_t base = 0;
    wide end = 0;

    bool empty() const { return end <= base; }
    bool in_address_space() const { return end <= top; }
    bool contains(std::uint64_t addr) const { return addr >= base && addr < end; }
    // Two ranges share a byte; an empty range shares none.
    bool overlaps(const address_range& o) const {
        return !empty() && !o.empty() && base < o.end && o.base < end;
    }
};

struct matrix_layout {
    std::uint64_t base = 0;
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    std::uint64_t elem_size = 0;
    std::uint64_t row_stride = 0;  // bytes from the start of one row to the next

    std::uint64_t address(std::uint64_t r, std::uint64_t c) const {
        return base + r * row_stride + c * elem_size;
    }
    std::uint64_t row_bytes() const { return cols * elem_size; }
    // From the first byte to one past the last byte that belongs to an element.
    address_range range() const {
        if (rows == 0 || cols == 0) return {base, base};
        using wide = address_range::wide;
        return {base, wide{base} + wide{rows - 1} * row_stride + wide{cols} * elem_size};
    }
    bool well_formed() const { return rows > 0 && cols > 0 && elem_size > 0 && row_stride >= row_bytes(); }

    struct element {
        std::uint64_t row = 0;
        std::uint64_t col = 0;
    };
    // The element that starts exactly at addr, if any. Stride padding and misaligned addresses
    // belong to no element.
    std::optional<element> element_at(std::uint64_t addr) const {
        if (!range().contains(addr)) return std::nullopt;
        const std::uint64_t off = addr - base;
        const std::uint64_t r = off / row_stride;
        const std::uint64_t in_row = off % row_stride;
        if (in_row % elem_size != 0 || in_row / elem_size >= cols) return std::nullopt;
        return element{r, in_row / elem_size};
    }
    // True when addr is any byte of an element (not stride padding).
    bool covers(std::uint64_t addr) const {
        if (!range().contains(addr)) return false;
        return (addr - base) % row_stride < row_bytes();
    }
};

// A row-major layout; a stride of 0 means packed rows.
inline matrix_layout make_layout(std::uint64_t base, std::uint64_t rows, std::uint64_t cols,
                                 std::uint64_t elem_size, std::uint64_t row_stride = 0) {
    return matrix_layout{base, rows, cols, elem_size, row_stride == 0 ? cols * elem_size : row_stride};
}

}  // namespace systolic
