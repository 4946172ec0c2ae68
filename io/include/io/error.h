// The error every systolic::io function throws: one printable line that starts with the path (or
// the option) it is about, ready to follow "<program>: error: ".
#pragma once

#include <stdexcept>

namespace systolic::io {

class io_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace systolic::io
