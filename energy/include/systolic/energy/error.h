// The error every systolic::energy function throws: one printable line that starts with the table
// or file it is about (and names the missing action or value), ready to follow "<program>: error: ".
// A front end maps it to exit status 2, as it does a bad option.
#pragma once

#include <stdexcept>

namespace systolic::energy {

class energy_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace systolic::energy
