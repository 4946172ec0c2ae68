#include "systolic/register_block.h"

#include <iterator>
#include <stdexcept>

namespace systolic {

namespace {
constexpr std::size_t count = std::size(regmap::registers);
}

register_block::register_block(std::function<std::uint32_t(const regmap::reg&)> configured)
    : m_configured(std::move(configured)), m_values(count), m_hooks(count) {
    reset();
}

void register_block::reset() {
    for (std::size_t i = 0; i < count; ++i) {
        const regmap::reg& r = regmap::registers[i];
        m_values[i] = r.reset_doc && m_configured ? m_configured(r) : r.reset;
    }
}

const regmap::reg* register_block::at(std::uint64_t offset) {
    for (const regmap::reg& r : regmap::registers)
        if (r.offset == offset) return &r;
    return nullptr;
}

std::size_t register_block::index(std::uint32_t offset) {
    const regmap::reg* r = at(offset);
    if (!r) throw std::out_of_range("register_block: no register at this offset");
    return static_cast<std::size_t>(r - regmap::registers);
}

register_block::result register_block::read(std::uint64_t offset, std::uint32_t& value) const {
    const regmap::reg* r = at(offset);
    if (!r) return result::address_error;
    value = m_values[static_cast<std::size_t>(r - regmap::registers)];
    return result::ok;
}

register_block::result register_block::write(std::uint64_t offset, std::uint32_t value) {
    const regmap::reg* r = at(offset);
    if (!r) return result::address_error;
    if (r->rule == regmap::access::ro) return result::command_error;
    const std::size_t i = static_cast<std::size_t>(r - regmap::registers);
    m_values[i] = r->rule == regmap::access::w1c ? m_values[i] & ~value : value;
    if (m_hooks[i]) m_hooks[i](value);
    return result::ok;
}

void register_block::on_write(std::uint32_t offset, write_hook hook) {
    m_hooks[index(offset)] = std::move(hook);
}

}  // namespace systolic
