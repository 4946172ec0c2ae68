#include "systolic/energy/node_scaling.h"

#include <cmath>
#include <iterator>

#include "systolic/energy/error.h"

namespace systolic::energy {

namespace {

// One node of the fit. Energy relative to the paper's reference: a*V^2 + b*V + c, the row
// Accelergy's library plug-in uses for the node (LP at 45 and 32 nm, HP at 20 nm and below; the
// older nodes have one row). Coefficients verbatim from wromaszkan/nodeScale@0676b74:nodeScale.py
// depCoeffDict lines 60-79, columns 4-6, which Accelergy-Project/accelergy-library-plug-in@ba4e9da:
// scaling.py ENERGY_SCALING lines 35-46 equals. area_from_45: nodeScale.py areaDict['45'] (line 50),
// the paper's 45 nm -> node area multipliers, equal to scaling.py AREA_SCALING's 45 nm row.
struct node_fit {
    double nm;
    const char* row;
    double a, b, c;
    double area_from_45;
};
constexpr node_fit fits[] = {
    {180, "180", 0, 24.64, -17.98, 19},
    {130, "130", 7.171, -6.709, 2.904, 6.4},
    {90, "90", 4.762, -4.781, 2.092, 2.8},
    {65, "65", 3.755, -4.398, 1.975, 1.5},
    {45, "LP45", 1.103, -0.362, 0.2767, 1},
    {32, "LP32", 0.9559, -0.7823, 0.471, 0.46},
    {20, "HP20", 0.373, -0.1582, 0.04104, 0.21},
    {16, "HP16", 0.2958, -0.1241, 0.03024, 0.19},
    {14, "HP14", 0.2363, -0.09675, 0.02239, 0.17},
    {10, "HP10", 0.2068, -0.09311, 0.02375, 0.1},
    {7, "HP7", 0.1776, -0.09097, 0.02447, 0.059},
};

std::string nm_text(double nm) {
    std::string s = std::to_string(nm);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
}

const node_fit& fit_of(double nm) {
    for (const auto& f : fits)
        if (f.nm == nm) return f;
    throw energy_error("tech node " + nm_text(nm) + " nm: not a node of the Stillmaker-Baas 2017 fit (" +
                       scaling_nodes_text() + ")");
}

double relative_energy(const node_fit& f, double vdd) {
    const double e = f.a * vdd * vdd + f.b * vdd + f.c;
    if (!(e > 0))
        throw energy_error("tech node " + nm_text(f.nm) + " nm at " + nm_text(vdd) +
                           " V: outside the Stillmaker-Baas 2017 fit (no positive energy)");
    return e;
}

}  // namespace

std::vector<double> scaling_nodes() {
    std::vector<double> out;
    for (const auto& f : fits)
        out.push_back(f.nm);
    return out;
}

std::string scaling_nodes_text() {
    std::string out;
    const std::size_t n = std::size(fits);
    for (std::size_t i = 0; i < n; ++i)
        out += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + nm_text(fits[i].nm);
    return out + " nm";
}

double energy_factor(double from_nm, double to_nm, double vdd) {
    const node_fit& from = fit_of(from_nm);
    const node_fit& to = fit_of(to_nm);
    return relative_energy(to, vdd) / relative_energy(from, vdd);
}

double area_factor(double from_nm, double to_nm) {
    return fit_of(to_nm).area_from_45 / fit_of(from_nm).area_from_45;
}

}  // namespace systolic::energy
