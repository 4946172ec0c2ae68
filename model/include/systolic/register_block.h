// The accelerator's block of 32-bit registers as plain C++: the values, the access rules and the
// write hooks, all built from the one declaration in accelerator_map.h (VCML's reg<u32> with
// allow_read_write / on_write, without the sockets). The SystemC shell (accelerator.h) maps the
// results to TLM responses; a unit test can drive it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "systolic/accelerator_map.h"

namespace systolic {

class register_block {
public:
    enum class result { ok, address_error, command_error };
    // Called after a write has been stored by the access rule, with the value written; it may
    // set() the register (or others) to something else, e.g. clear self-clearing bits.
    using write_hook = std::function<void(std::uint32_t written)>;

    // Reset values from the map; the registers whose reset depends on the configuration (reset_doc)
    // take it from `configured`, by name.
    explicit register_block(std::function<std::uint32_t(const regmap::reg&)> configured = {});

    // Every register back to its reset value (the hooks stay).
    void reset();

    // Software's view: 32-bit accesses at 4-byte aligned offsets inside the block.
    result read(std::uint64_t offset, std::uint32_t& value) const;
    result write(std::uint64_t offset, std::uint32_t value);
    void on_write(std::uint32_t offset, write_hook hook);

    // The model's view: any register, whatever its access rule, with no hook.
    std::uint32_t get(std::uint32_t offset) const { return m_values[index(offset)]; }
    void set(std::uint32_t offset, std::uint32_t value) { m_values[index(offset)] = value; }
    std::uint64_t get64(std::uint32_t lo_offset) const {
        return get(lo_offset) | std::uint64_t{get(lo_offset + 4)} << 32;
    }
    void set64(std::uint32_t lo_offset, std::uint64_t value) {
        set(lo_offset, static_cast<std::uint32_t>(value));
        set(lo_offset + 4, static_cast<std::uint32_t>(value >> 32));
    }

    // The declared register at an offset, or null (a hole, or outside the block).
    static const regmap::reg* at(std::uint64_t offset);

private:
    static std::size_t index(std::uint32_t offset);

    std::function<std::uint32_t(const regmap::reg&)> m_configured;
    std::vector<std::uint32_t> m_values;  // in the map's order
    std::vector<write_hook> m_hooks;
};

}  // namespace systolic
