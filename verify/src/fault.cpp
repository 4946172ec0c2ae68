#include "systolic/verify/fault.h"

namespace systolic::verify {

bool needs_cycle_engine(fault f) {
    return f == fault::invalid_padding || f == fault::global_skew || f == fault::skip_advance ||
           f == fault::extra_advance || f == fault::skip_preload;
}

}  // namespace systolic::verify
