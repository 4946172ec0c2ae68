// Where a row-major matrix lives in the memory map: base address, shape, element size and the
// row stride in bytes (at least cols x element size; any excess is padding that is not the matrix).
#pragma once

#include <cstdint>
#include <optional>

namespace systolic {

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
    // One past the last byte that belongs to an element.
    std::uint64_t end() const { return rows == 0 ? base : address(rows - 1, cols); }
    bool well_formed() const { return rows > 0 && cols > 0 && elem_size > 0 && row_stride >= row_bytes(); }

    struct element {
        std::uint64_t row = 0;
        std::uint64_t col = 0;
    };
    // The element that starts exactly at addr, if any. Stride padding and misaligned addresses
    // belong to no element.
    std::optional<element> element_at(std::uint64_t addr) const {
        if (addr < base || addr >= end()) return std::nullopt;
        const std::uint64_t off = addr - base;
        const std::uint64_t r = off / row_stride;
        const std::uint64_t in_row = off % row_stride;
        if (in_row % elem_size != 0 || in_row / elem_size >= cols) return std::nullopt;
        return element{r, in_row / elem_size};
    }
    // True when addr is any byte of an element (not stride padding).
    bool covers(std::uint64_t addr) const {
        if (addr < base || addr >= end()) return false;
        return (addr - base) % row_stride < row_bytes();
    }
};

// A row-major layout; a stride of 0 means packed rows.
inline matrix_layout make_layout(std::uint64_t base, std::uint64_t rows, std::uint64_t cols,
                                 std::uint64_t elem_size, std::uint64_t row_stride = 0) {
    return matrix_layout{base, rows, cols, elem_size, row_stride == 0 ? cols * elem_size : row_stride};
}

}  // namespace systolic
