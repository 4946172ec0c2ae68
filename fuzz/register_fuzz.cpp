// libFuzzer target: the accelerator's register block and job decoding on arbitrary programming.
// The input is a sequence of 7-byte accesses (a read or write flag, a 16-bit offset and a 32-bit
// value) into the register block, then the job the registers describe is decoded for an array of
// 1-64. Every access must answer OK or an error response without touching anything else, and a
// decoded job must either be refused with a one-line message or be a job the controller accepts
// (validate_job finds nothing wrong): the accelerator checks everything before memory is touched.
// Seeds: fuzz/corpus/register.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "systolic/accelerator_job.h"
#include "systolic/register_block.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace systolic;
    if (size < 1) return 0;
    register_block regs;
    job_limits limits;
    limits.array_size = 1 + data[0] % 64;
    for (std::size_t i = 1; i + 7 <= size; i += 7) {
        std::uint16_t offset;
        std::uint32_t value;
        std::memcpy(&offset, data + i + 1, sizeof offset);
        std::memcpy(&value, data + i + 3, sizeof value);
        if (data[i] & 1) {
            (void)regs.write(offset, value);
        } else {
            std::uint32_t got = 0;
            if (regs.read(offset, got) != register_block::result::ok && got != 0)
                std::abort();  // refused: no value
        }
    }
    const decoded_job d = decode_job(read_request(regs), limits);
    if (!d.ok()) {
        if (d.message.empty() || d.message.find('\n') != std::string::npos) std::abort();
        return 0;
    }
    const std::uint64_t osz = operand_size(d.dtype), asz = accumulator_size(d.dtype);
    if (!validate_job(d.job, osz, asz).empty()) std::abort();
    return 0;
}
