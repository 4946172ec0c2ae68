// Technology-node scaling of energy and area (Stillmaker and Baas, "Scaling equations for the
// accurate prediction of CMOS device performance from 180 nm to 7 nm", Integration 58 (2017)
// 74-81). Energy relative to a reference is a*V^2 + b*V + c per node; scaling compares two nodes at
// the same supply voltage, with the rows Accelergy's library plug-in uses (LP at 45 and 32 nm, HP at
// 20 nm and below), so that our factors equal Accelergy's. Area scales by the paper's area matrix.
// Nodes outside the fitted set (22 and 28 nm among them) are refused, never interpolated.
#pragma once

#include <string>
#include <vector>

namespace systolic::energy {

// The nodes of the fit, in nm, oldest first.
std::vector<double> scaling_nodes();
// "180, 130, ... or 7 nm", for messages.
std::string scaling_nodes_text();

// Multiply an energy at from_nm by this for the same work at to_nm, both at vdd volts.
// energy_error for a node outside the fit, or a voltage where the fit gives no positive energy.
double energy_factor(double from_nm, double to_nm, double vdd);
// Multiply an area at from_nm by this for the same circuit at to_nm.
double area_factor(double from_nm, double to_nm);

}  // namespace systolic::energy
