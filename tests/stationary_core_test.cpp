// stationary_core against an independent model of the same array: a naive simulator with explicit
// registers per PE (weight, A token and valid bit, partial sum), updated edge by edge with two-phase
// copies exactly as the contract in stationary_core.h words the rules, and with its own arithmetic
// (exact sums in __int128, then wrapped or clamped; floats rounded after the product and again
// after the add), never the format's mac. Compared on random shapes and layouts, every format and
// both overflow modes, several folds of a tile combined: the outputs bit for bit (any NaN matches
// any NaN), every counter, and the registers of every PE, both after random slices of edges and
// after every single edge (through an edge_callback). Then closed forms: a GEMM split into folds,
// the same GEMM input-stationary through transposed views, the edge counts, and a planted fault
// (a preload one edge short) that must change the result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "systolic/number_format.h"
#include "systolic/stationary_core.h"

namespace {

using systolic::bf16;
using systolic::bf16_format;
using systolic::edge_callback;
using systolic::fp32_format;
using systolic::int32_format;
using systolic::int8_format;
using systolic::overflow_mode;
using systolic::stationary_core;
using u64 = std::uint64_t;
using i64 = std::int64_t;

const overflow_mode kModes[] = {overflow_mode::wrap, overflow_mode::saturate};

// ---- The test's own arithmetic

std::uint32_t bits_of(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

float widened(float v) {
    return v;
}
float widened(bf16 v) {  // bf16 is the top half of a binary32
    const std::uint32_t u = std::uint32_t{v.bits} << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// The exact sum x + y, wrapped modulo 2^bits or clamped to the accumulator's range; overflowed
// when it did not fit.
template <class Acc>
Acc integer_sum(Acc x, __int128 y, overflow_mode mode, bool& overflowed) {
    const __int128 sum = __int128{x} + y;
    const __int128 lo = std::numeric_limits<Acc>::min(), hi = std::numeric_limits<Acc>::max();
    overflowed = sum < lo || sum > hi;
    if (!overflowed) return static_cast<Acc>(sum);
    if (mode == overflow_mode::saturate) return static_cast<Acc>(sum < lo ? lo : hi);
    return static_cast<Acc>(static_cast<std::make_unsigned_t<Acc>>(sum));  // modulo 2^bits
}

template <class Format>
typename Format::accumulator_type naive_mac(typename Format::accumulator_type acc,
                                            typename Format::operand_type a, typename Format::operand_type w,
                                            overflow_mode mode, bool& overflowed) {
    if constexpr (Format::is_integer) {
        return integer_sum(acc, __int128{a} * __int128{w}, mode, overflowed);
    } else {
        overflowed = false;
        volatile float product = widened(a) * widened(w);  // rounded to float on its own
        return acc + product;
    }
}

template <class Format>
typename Format::accumulator_type naive_add(typename Format::accumulator_type acc,
                                            typename Format::accumulator_type x, overflow_mode mode,
                                            bool& overflowed) {
    if constexpr (Format::is_integer) {
        return integer_sum(acc, __int128{x}, mode, overflowed);
    } else {
        overflowed = false;
        return acc + x;
    }
}

// Accumulators: equal, or for floats the same bits, or both NaN (payloads depend on operand order).
template <class T>
bool same_value(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
        return bits_of(x) == bits_of(y);
    } else {
        return x == y;
    }
}
// Operands are only ever copied: the same bits.
bool same_operand(float x, float y) {
    return bits_of(x) == bits_of(y);
}
bool same_operand(bf16 x, bf16 y) {
    return x.bits == y.bits;
}
template <class T>
bool same_operand(T x, T y) {
    return x == y;
}
double printable(bf16 v) {
    return widened(v);
}
template <class T>
double printable(T v) {
    return static_cast<double>(v);
}

// ---- The naive simulator

template <class Format>
struct naive_array {
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    using fold = typename stationary_core<Format>::fold;

    std::size_t rows, cols;
    overflow_mode mode = overflow_mode::wrap;
    std::vector<op_t> w, a;
    std::vector<std::uint8_t> a_valid;
    std::vector<acc_t> p;
    std::vector<u64> consumed, overflows;
    u64 edges = 0, preload_edges = 0, partial_overflows = 0;

    naive_array(std::size_t r, std::size_t c) : rows(r), cols(c) { clear(); }

    u64 overflows_total() const {
        u64 sum = 0;
        for (u64 o : overflows)
            sum += o;
        return sum;
    }

    void clear() {
        w.assign(rows * cols, op_t{});
        a.assign(rows * cols, op_t{});
        a_valid.assign(rows * cols, 0);
        p.assign(rows * cols, acc_t{});
        consumed.assign(rows * cols, 0);
        overflows.assign(rows * cols, 0);
        edges = preload_edges = partial_overflows = 0;
    }

    void preload_edge(const fold& f, u64 e) {
        const std::vector<op_t> old = w;
        const i64 k = i64(rows) - 1 - i64(e);
        for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t j = 0; j < cols; ++j) {
                if (i > 0) {
                    w[i * cols + j] = old[(i - 1) * cols + j];
                } else {
                    const bool real = k >= 0 && u64(k) < f.l && j < f.n;
                    w[j] = real ? f.weight[u64(k) * f.weight_i + j * f.weight_j] : op_t{};
                }
            }
        }
        ++edges;
        ++preload_edges;
    }

    void stream_edge(const fold& f, u64 e) {
        // Phase one: every register takes its neighbour's old value (west, north) or the input.
        const std::vector<op_t> old_a = a;
        const std::vector<std::uint8_t> old_valid = a_valid;
        const std::vector<acc_t> old_p = p;
        for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t j = 0; j < cols; ++j) {
                const std::size_t k = i * cols + j;
                if (j > 0) {
                    a[k] = old_a[k - 1];
                    a_valid[k] = old_valid[k - 1];
                } else {
                    const i64 t = i64(e) - i64(i);
                    const bool valid = t >= 0 && u64(t) < f.t;
                    a_valid[k] = valid;
                    a[k] = valid && i < f.l ? f.stream[u64(t) * f.stream_t + i * f.stream_i] : op_t{};
                }
                p[k] = i > 0 ? old_p[k - cols] : acc_t{};
            }
        }
        // Phase two: the MACs.
        for (std::size_t k = 0; k < rows * cols; ++k) {
            if (!a_valid[k]) continue;
            bool overflowed = false;
            p[k] = naive_mac<Format>(p[k], a[k], w[k], mode, overflowed);
            ++consumed[k];
            overflows[k] += overflowed;
        }
        // The bottom row's finished sums.
        for (std::size_t j = 0; j < cols && j < f.n; ++j) {
            const i64 t = i64(e) - i64(rows - 1) - i64(j);
            if (t < 0 || u64(t) >= f.t) continue;
            acc_t& dst = f.acc[u64(t) * f.acc_t + j * f.acc_j];
            const acc_t sum = p[(rows - 1) * cols + j];
            if (f.combine) {
                bool overflowed = false;
                dst = naive_add<Format>(dst, sum, mode, overflowed);
                partial_overflows += overflowed;
            } else {
                dst = sum;
            }
        }
        ++edges;
    }
};

// The kernel's state against the simulator's: counters, every PE's registers and counts.
template <class Format>
::testing::AssertionResult same_state(const stationary_core<Format>& core, const naive_array<Format>& sim,
                                      bool every_block) {
    const std::size_t rows = sim.rows, cols = sim.cols;
    if (core.edges() != sim.edges)
        return ::testing::AssertionFailure() << "edges " << core.edges() << ", want " << sim.edges;
    if (core.preload_edges() != sim.preload_edges)
        return ::testing::AssertionFailure()
               << "preload edges " << core.preload_edges() << ", want " << sim.preload_edges;
    if (core.partial_overflows() != sim.partial_overflows)
        return ::testing::AssertionFailure()
               << "partial overflows " << core.partial_overflows() << ", want " << sim.partial_overflows;
    u64 macs = 0, overflows = 0;
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < cols; ++j) {
            const std::size_t k = i * cols + j;
            const auto tok = core.a(i, j);
            auto where = [&] {
                return "PE(" + std::to_string(i) + "," + std::to_string(j) + ") after edge " +
                       std::to_string(sim.edges) + ": ";
            };
            if (tok.valid != (sim.a_valid[k] != 0) || !same_operand(tok.value, sim.a[k]))
                return ::testing::AssertionFailure()
                       << where() << "A token " << printable(tok.value) << "/" << tok.valid << ", want "
                       << printable(sim.a[k]) << "/" << sim.a_valid[k];
            if (!same_operand(core.weight(i, j), sim.w[k]))
                return ::testing::AssertionFailure() << where() << "weight " << printable(core.weight(i, j))
                                                     << ", want " << printable(sim.w[k]);
            if (!same_value(core.psum(i, j), sim.p[k]))
                return ::testing::AssertionFailure() << where() << "psum " << printable(core.psum(i, j))
                                                     << ", want " << printable(sim.p[k]);
            if (core.consumed(i, j) != sim.consumed[k])
                return ::testing::AssertionFailure()
                       << where() << "consumed " << core.consumed(i, j) << ", want " << sim.consumed[k];
            macs += sim.consumed[k];
            overflows += sim.overflows[k];
        }
    }
    if (core.macs() != macs)
        return ::testing::AssertionFailure() << "macs " << core.macs() << ", want " << macs;
    if (core.overflows_in(rows, cols) != overflows)
        return ::testing::AssertionFailure()
               << "overflows " << core.overflows_in(rows, cols) << ", want " << overflows;
    if (every_block) {  // the blocks' sums pin down every PE's own overflow count
        for (std::size_t r = 0; r <= rows; ++r) {
            for (std::size_t c = 0; c <= cols; ++c) {
                u64 m = 0, o = 0;
                for (std::size_t i = 0; i < r; ++i)
                    for (std::size_t j = 0; j < c; ++j) {
                        m += sim.consumed[i * cols + j];
                        o += sim.overflows[i * cols + j];
                    }
                if (core.macs_in(r, c) != m || core.overflows_in(r, c) != o)
                    return ::testing::AssertionFailure()
                           << "block " << r << "x" << c << ": macs " << core.macs_in(r, c) << " (want " << m
                           << "), overflows " << core.overflows_in(r, c) << " (want " << o << ")";
            }
        }
    }
    return ::testing::AssertionSuccess();
}

template <class T>
::testing::AssertionResult same_buffers(const std::vector<T>& got, const std::vector<T>& want) {
    if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
    for (std::size_t e = 0; e < got.size(); ++e)
        if (!same_value(got[e], want[e]))
            return ::testing::AssertionFailure() << "first difference at element " << e << ": got "
                                                 << printable(got[e]) << ", want " << printable(want[e]);
    return ::testing::AssertionSuccess();
}

// ---- Random operands

template <class Format>
typename Format::operand_type random_operand(std::mt19937_64& rng, bool extremes) {
    using op_t = typename Format::operand_type;
    const u64 r = rng();
    if constexpr (Format::is_integer) {
        if (extremes && r % 4 == 0)
            return (r & 8) ? std::numeric_limits<op_t>::max() : std::numeric_limits<op_t>::min();
        if (extremes && r % 4 == 1)  // large, anywhere in the type's range
            return static_cast<op_t>(rng());
        return static_cast<op_t>(i64(rng() % 15) - 7);
    } else {
        const float specials[] = {std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(),
                                  -0.0f,
                                  0.0f,
                                  std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min(),
                                  -3e38f};
        float v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
        if (extremes && r % 6 == 0) v = specials[(r >> 8) % 8];
        return systolic::value_from<op_t>(v);
    }
}

template <class Format>
typename Format::accumulator_type random_accumulator(std::mt19937_64& rng, bool near_limits) {
    using acc_t = typename Format::accumulator_type;
    if constexpr (Format::is_integer) {
        if (near_limits) {  // later adds then overflow now and then
            const acc_t edge =
                (rng() & 1) ? std::numeric_limits<acc_t>::max() : std::numeric_limits<acc_t>::min();
            return static_cast<acc_t>(edge - (edge > 0 ? 1 : -1) * static_cast<acc_t>(rng() % 40000));
        }
        return static_cast<acc_t>(i64(rng() % 2001) - 1000);
    } else {
        return std::uniform_real_distribution<float>(-8.0f, 8.0f)(rng);
    }
}

// One fold's operands, in one of two layouts each (row- or column-major, with a gap), inside buffers
// whose other elements are noise: a kernel that read them would give other sums.
template <class Format>
struct fold_operands {
    using op_t = typename Format::operand_type;
    std::vector<op_t> s, w;
    typename stationary_core<Format>::fold f;
};

template <class Format>
fold_operands<Format> random_fold(std::mt19937_64& rng, u64 t, u64 l, std::size_t n, bool extremes) {
    fold_operands<Format> o;
    const std::size_t gap = rng() % 3;
    if (rng() & 1) {
        o.f.stream_t = l + gap, o.f.stream_i = 1;
    } else {
        o.f.stream_t = 1, o.f.stream_i = t + gap;
    }
    if (rng() & 1) {
        o.f.weight_i = n + gap, o.f.weight_j = 1;
    } else {
        o.f.weight_i = 1, o.f.weight_j = l + gap;
    }
    o.s.resize((t - 1) * o.f.stream_t + (l - 1) * o.f.stream_i + 1 + gap);
    o.w.resize((l - 1) * o.f.weight_i + (n - 1) * o.f.weight_j + 1 + gap);
    for (auto& v : o.s)
        v = random_operand<Format>(rng, extremes);
    for (auto& v : o.w)
        v = random_operand<Format>(rng, extremes);
    o.f.stream = o.s.data();
    o.f.weight = o.w.data();
    o.f.t = t;
    o.f.l = l;
    o.f.n = n;
    return o;
}

// Steps the simulator edge by edge inside the kernel's calls and checks the kernel after each one.
template <class Format>
struct lockstep : edge_callback {
    const stationary_core<Format>* core = nullptr;
    naive_array<Format>* sim = nullptr;
    const typename stationary_core<Format>::fold* f = nullptr;
    bool preloading = false;
    u64 next = 0;  // the edge index the kernel must report next
    bool ok = true;
    std::string failure;

    void after_edge(u64 e) override {
        if (!ok) return;
        if (e != next) {
            ok = false;
            failure = "callback for edge " + std::to_string(e) + ", want " + std::to_string(next);
            return;
        }
        ++next;
        if (preloading)
            sim->preload_edge(*f, e);
        else
            sim->stream_edge(*f, e);
        const auto same = same_state(*core, *sim, false);
        if (!same) {
            ok = false;
            failure = std::string(preloading ? "preload" : "stream") + " edge " + std::to_string(e) + ": " +
                      same.message();
        }
    }
};

// Edges [0, total) in random slices (some of them empty), each through call(first, count).
template <class Call>
void in_slices(std::mt19937_64& rng, u64 total, Call call) {
    for (u64 first = 0; first < total || rng() % 8 == 0;) {
        const u64 count = rng() % 5 == 0 ? 0 : std::min<u64>(total - first, 1 + rng() % (total + 1));
        call(first, count);
        if (::testing::Test::HasFatalFailure()) return;
        first += count;
        if (first >= total) break;
    }
}

// One random tile: R x C, folds of T rows and n columns each over L_f terms, stored then combined
// (or all combined into accumulators near the limits). Three kernels run it: whole phases per call;
// random slices, checked against the simulator after each; random slices with the lockstep
// callback, checked after every edge. All must give the simulator's outputs and counters. In an
// irregular tile the phases are an edge or two short or long (a fault's schedule): the rules
// still hold, but the tile is no longer complete.
// What the random tiles exercised, so that a test can insist that they reached the cases it is
// about (overflowing steps and adds, special floats in the outputs).
struct coverage {
    u64 overflows = 0, partial_overflows = 0, nans = 0, infinities = 0, irregular = 0;
};

template <class Format>
void random_tile(std::mt19937_64& rng, std::size_t rows, std::size_t cols, overflow_mode mode,
                 const std::string& what, coverage& seen) {
    using acc_t = typename Format::accumulator_type;
    const u64 t = 1 + rng() % 12;
    const std::size_t n = 1 + rng() % cols;
    const std::size_t folds = 1 + rng() % 4;
    const bool extremes = rng() % 4 != 0;
    const bool all_combined = Format::is_integer ? rng() % 3 == 0 : rng() % 5 == 0;
    const bool irregular = rng() % 5 == 0;

    // The output: T x n inside a buffer with gaps, either layout.
    std::size_t acc_t_stride, acc_j_stride;
    const std::size_t gap = rng() % 3;
    if (rng() & 1) {
        acc_t_stride = n + gap, acc_j_stride = 1;
    } else {
        acc_t_stride = 1, acc_j_stride = t + gap;
    }
    std::vector<acc_t> init((t - 1) * acc_t_stride + (n - 1) * acc_j_stride + 1 + gap);
    for (auto& v : init)
        v = random_accumulator<Format>(rng, all_combined);

    std::vector<fold_operands<Format>> ops;
    std::vector<u64> preload_edges, stream_edges;
    for (std::size_t k = 0; k < folds; ++k) {
        ops.push_back(random_fold<Format>(rng, t, 1 + rng() % rows, n, extremes));
        ops.back().f.combine = all_combined || k > 0;
        const i64 dp = irregular ? i64(rng() % 3) - 1 : 0, ds = irregular ? i64(rng() % 5) - 2 : 0;
        preload_edges.push_back(u64(std::max<i64>(0, i64(rows) + dp)));
        stream_edges.push_back(u64(std::max<i64>(0, i64(t + rows + cols - 2) + ds)));
    }

    naive_array<Format> sim(rows, cols), step_sim(rows, cols), edge_sim(rows, cols);
    for (auto* s : {&sim, &step_sim, &edge_sim})
        s->mode = mode;
    stationary_core<Format> whole(rows, cols), sliced(rows, cols), edged(rows, cols);
    for (auto* c : {&whole, &sliced, &edged})
        c->set_overflow(mode);
    std::vector<acc_t> sim_acc = init, whole_acc = init, sliced_acc = init, step_acc = init, edged_acc = init,
                       edge_acc = init;
    lockstep<Format> watch;
    watch.core = &edged;
    watch.sim = &edge_sim;

    u64 terms = 0;
    for (std::size_t k = 0; k < folds; ++k) {
        auto with_acc = [&](std::vector<acc_t>& acc) {
            auto f = ops[k].f;
            f.acc = acc.data();
            f.acc_t = acc_t_stride;
            f.acc_j = acc_j_stride;
            return f;
        };
        const std::string fold_what = what + " fold " + std::to_string(k);
        // The simulator, edge by edge.
        const auto sf = with_acc(sim_acc);
        for (u64 e = 0; e < preload_edges[k]; ++e)
            sim.preload_edge(sf, e);
        for (u64 e = 0; e < stream_edges[k]; ++e)
            sim.stream_edge(sf, e);
        // Whole phases.
        const auto wf = with_acc(whole_acc);
        whole.preload(wf, 0, preload_edges[k]);
        whole.stream(wf, 0, stream_edges[k]);
        // Random slices, the simulator stepped to the same edge after each.
        const auto kf = with_acc(sliced_acc), nf = with_acc(step_acc);
        in_slices(rng, preload_edges[k], [&](u64 first, u64 count) {
            sliced.preload(kf, first, count);
            for (u64 e = first; e < first + count; ++e)
                step_sim.preload_edge(nf, e);
            ASSERT_TRUE(same_state(sliced, step_sim, false)) << fold_what << " preload to " << first + count;
        });
        in_slices(rng, stream_edges[k], [&](u64 first, u64 count) {
            sliced.stream(kf, first, count);
            for (u64 e = first; e < first + count; ++e)
                step_sim.stream_edge(nf, e);
            ASSERT_TRUE(same_state(sliced, step_sim, false)) << fold_what << " stream to " << first + count;
            ASSERT_TRUE(same_buffers(sliced_acc, step_acc)) << fold_what << " stream to " << first + count;
        });
        // Random slices, each edge checked by the callback.
        const auto ef = with_acc(edged_acc), mf = with_acc(edge_acc);
        watch.f = &mf;
        watch.preloading = true;
        watch.next = 0;
        in_slices(rng, preload_edges[k],
                  [&](u64 first, u64 count) { edged.preload(ef, first, count, &watch); });
        watch.preloading = false;
        watch.next = 0;
        in_slices(rng, stream_edges[k], [&](u64 first, u64 count) {
            edged.stream(ef, first, count, &watch);
            ASSERT_TRUE(same_buffers(edged_acc, edge_acc)) << fold_what << " stream to " << first + count;
        });
        ASSERT_TRUE(watch.ok) << fold_what << ": " << watch.failure;
        ASSERT_EQ(watch.next, stream_edges[k]) << fold_what;
        terms += t;
    }
    seen.overflows += sim.overflows_total();
    seen.partial_overflows += sim.partial_overflows;
    seen.irregular += irregular;
    if constexpr (!Format::is_integer) {
        for (float v : sim_acc) {
            seen.nans += std::isnan(v);
            seen.infinities += std::isinf(v);
        }
    }
    EXPECT_TRUE(same_buffers(whole_acc, sim_acc)) << what << " (whole phases)";
    EXPECT_TRUE(same_buffers(sliced_acc, sim_acc)) << what << " (slices)";
    EXPECT_TRUE(same_buffers(edged_acc, sim_acc)) << what << " (edge by edge)";
    EXPECT_TRUE(same_state(whole, sim, true)) << what << " (whole phases)";
    EXPECT_TRUE(same_state(sliced, sim, true)) << what << " (slices)";
    EXPECT_TRUE(same_state(edged, sim, true)) << what << " (edge by edge)";
    if (!irregular) {
        EXPECT_TRUE(whole.complete(terms)) << what;
        EXPECT_TRUE(whole.stuck(terms).empty()) << what;
        EXPECT_EQ(whole.macs(), terms * rows * cols) << what;
        EXPECT_EQ(whole.macs_in(rows, n), terms * rows * n) << what;
        u64 edges = 0;
        for (std::size_t k = 0; k < folds; ++k)
            edges += rows + t + rows + cols - 2;
        EXPECT_EQ(whole.edges(), edges) << what;
        EXPECT_EQ(whole.preload_edges(), folds * rows) << what;
    } else {
        // stuck lists exactly the PEs whose count is off, in row-major order.
        const auto stuck = whole.stuck(terms);
        std::size_t s = 0;
        for (std::size_t k = 0; k < rows * cols; ++k) {
            if (sim.consumed[k] == terms) continue;
            ASSERT_LT(s, stuck.size()) << what;
            EXPECT_EQ(stuck[s].row, k / cols) << what;
            EXPECT_EQ(stuck[s].col, k % cols) << what;
            EXPECT_EQ(stuck[s].consumed, sim.consumed[k]) << what;
            ++s;
        }
        EXPECT_EQ(s, stuck.size()) << what;
        EXPECT_EQ(whole.complete(terms), stuck.empty()) << what;
    }
}

template <class Format>
coverage random_tiles(u64 seed, int trials) {
    std::mt19937_64 rng(seed);
    coverage seen;
    for (int trial = 0; trial < trials; ++trial) {
        for (auto mode : kModes) {
            const std::size_t rows = 1 + rng() % 9, cols = 1 + rng() % 9;
            random_tile<Format>(rng, rows, cols, mode,
                                std::string(Format::name) + " trial " + std::to_string(trial) + " " +
                                    std::to_string(rows) + "x" + std::to_string(cols) +
                                    (mode == overflow_mode::wrap ? " wrap" : " saturate"),
                                seen);
            if (::testing::Test::HasFatalFailure()) return seen;
        }
    }
    EXPECT_GT(seen.irregular, 0u);
    return seen;
}

// int8 x int8 products cannot overflow int32 over at most 9 terms, so only the adds into
// accumulators near the limits do; int32 sums overflow in the array too.
TEST(StationaryCore, Int8MatchesNaiveArray) {
    const coverage seen = random_tiles<int8_format>(1, 200);
    EXPECT_EQ(seen.overflows, 0u);
    EXPECT_GT(seen.partial_overflows, 0u);
}
TEST(StationaryCore, Int32MatchesNaiveArray) {
    const coverage seen = random_tiles<int32_format>(2, 200);
    EXPECT_GT(seen.overflows, 0u);
    EXPECT_GT(seen.partial_overflows, 0u);
}
TEST(StationaryCore, Fp32MatchesNaiveArray) {
    const coverage seen = random_tiles<fp32_format>(3, 200);
    EXPECT_GT(seen.nans, 0u);
    EXPECT_GT(seen.infinities, 0u);
}
TEST(StationaryCore, Bf16MatchesNaiveArray) {
    const coverage seen = random_tiles<bf16_format>(4, 200);
    EXPECT_GT(seen.nans, 0u);
    EXPECT_GT(seen.infinities, 0u);
}

// Arrays big enough that the kernel runs blocks of rows for groups of edges (more than 1024 PEs),
// and one so wide that a block is a single row.
TEST(StationaryCore, BlockedArraysMatchNaiveArray) {
    std::mt19937_64 rng(5);
    coverage seen;
    const struct { std::size_t rows, cols; } shapes[] = {{40, 40}, {64, 20}, {33, 100}, {3, 700}};
    for (const auto& s : shapes) {
        const std::string shape = std::to_string(s.rows) + "x" + std::to_string(s.cols);
        random_tile<fp32_format>(rng, s.rows, s.cols, overflow_mode::wrap, "fp32 " + shape, seen);
        random_tile<int32_format>(rng, s.rows, s.cols, overflow_mode::saturate, "int32 " + shape, seen);
        if (HasFatalFailure()) return;
    }
}

// ---- Closed forms

// C (T x N) = A (T x K) x B (K x N), K split into folds of at most R terms, on an R x C array with
// N <= C: weight-stationary, A streams (s(t, i) = A[t][k0 + i]) and B stays (w(i, j) = B[k0 + i][j]).
template <class Format>
void gemm_in_folds(std::mt19937_64& rng, std::size_t rows, std::size_t cols, bool input_stationary) {
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    // Input-stationary, the roles swap: C^T (N x M) = B^T (N x K) x A^T (K x M), so B streams, A stays
    // (M <= C columns of it), and C is written transposed. The same buffers, other strides.
    const std::size_t t_len = 1 + rng() % 12, cols_used = 1 + rng() % cols, k = 1 + rng() % (3 * rows);
    const std::size_t m = input_stationary ? cols_used : t_len, n = input_stationary ? t_len : cols_used;
    std::vector<op_t> a(m * k), b(k * n);
    std::vector<i64> ai(m * k), bi(k * n);
    for (std::size_t e = 0; e < a.size(); ++e) {
        ai[e] = i64(rng() % 19) - 9;
        a[e] = systolic::value_from<op_t>(double(ai[e]));
    }
    for (std::size_t e = 0; e < b.size(); ++e) {
        bi[e] = i64(rng() % 19) - 9;
        b[e] = systolic::value_from<op_t>(double(bi[e]));
    }
    std::vector<acc_t> c(m * n, acc_t{42});  // stored over by the first fold

    stationary_core<Format> core(rows, cols);
    u64 folds = 0;
    for (std::size_t k0 = 0; k0 < k; k0 += rows, ++folds) {
        typename stationary_core<Format>::fold f;
        f.t = t_len;
        f.l = std::min(rows, k - k0);
        f.n = cols_used;
        if (!input_stationary) {
            f.stream = &a[k0], f.stream_t = k, f.stream_i = 1;      // A[t][k0 + i]
            f.weight = &b[k0 * n], f.weight_i = n, f.weight_j = 1;  // B[k0 + i][j]
            f.acc = c.data(), f.acc_t = n, f.acc_j = 1;             // C[t][j]
        } else {
            f.stream = &b[k0 * n], f.stream_t = 1, f.stream_i = n;  // B[k0 + i][t]
            f.weight = &a[k0], f.weight_i = 1, f.weight_j = k;      // A[j][k0 + i]
            f.acc = c.data(), f.acc_t = 1, f.acc_j = n;             // C[j][t]
        }
        f.combine = k0 > 0;
        core.run(f);
    }
    const std::string what = std::string(Format::name) + (input_stationary ? " IS " : " WS ") +
                             std::to_string(rows) + "x" + std::to_string(cols) + " M=" + std::to_string(m) +
                             " N=" + std::to_string(n) + " K=" + std::to_string(k);
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
            i64 want = 0;
            for (std::size_t kk = 0; kk < k; ++kk)
                want += ai[i * k + kk] * bi[kk * n + j];
            ASSERT_EQ(printable(c[i * n + j]), double(want)) << what << " C(" << i << "," << j << ")";
        }
    }
    EXPECT_EQ(core.edges(), folds * (rows + (t_len + rows + cols - 2))) << what;
    EXPECT_EQ(core.preload_edges(), folds * rows) << what;
    EXPECT_TRUE(core.complete(folds * t_len)) << what;
    EXPECT_EQ(core.macs(), folds * t_len * rows * cols) << what;
    EXPECT_EQ(core.macs_in(rows, cols_used), folds * t_len * rows * cols_used) << what;
    EXPECT_EQ(core.overflows_in(rows, cols), 0u) << what;
    EXPECT_EQ(core.partial_overflows(), 0u) << what;
}

template <class Format>
void gemms(u64 seed) {
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 60; ++trial) {
        const std::size_t rows = 1 + rng() % 9, cols = 1 + rng() % 9;
        gemm_in_folds<Format>(rng, rows, cols, false);
        gemm_in_folds<Format>(rng, rows, cols, true);
        if (::testing::Test::HasFatalFailure()) return;
    }
    gemm_in_folds<Format>(rng, 48, 48, false);  // the blocked path
    gemm_in_folds<Format>(rng, 48, 48, true);
}

TEST(StationaryCore, Int8GemmInFolds) {
    gemms<int8_format>(10);
}
TEST(StationaryCore, Int32GemmInFolds) {
    gemms<int32_format>(11);
}
TEST(StationaryCore, Fp32GemmInFolds) {
    gemms<fp32_format>(12);
}
TEST(StationaryCore, Bf16GemmInFolds) {
    gemms<bf16_format>(13);
}

// int32 operands of -2^31: each product is 2^62, and two of them leave int64. With L = 2 every
// output's second step overflows, at the PEs of row 1; wrapping the sum is -2^63, saturating 2^63-1.
// One term (L = 1) never overflows. On two rows this is the bound's edge: one product fits, two
// (R of them) may not, so the steps must be counted; on one row nothing can overflow.
TEST(StationaryCore, Int32SumsOverflowOnTheSecondTerm) {
    const std::int32_t min = std::numeric_limits<std::int32_t>::min();
    for (auto mode : kModes) {
        for (const std::size_t rows : {1u, 2u, 3u}) {
            for (u64 l = 1; l <= std::min<u64>(2, rows); ++l) {
                const std::size_t cols = 4, n = 3;
                const u64 t = 5;
                std::vector<std::int32_t> s(t * rows, min), w(rows * cols, min);
                std::vector<std::int64_t> acc(t * n, 7);
                stationary_core<int32_format> core(rows, cols);
                core.set_overflow(mode);
                stationary_core<int32_format>::fold f;
                f.stream = s.data(), f.stream_t = rows, f.stream_i = 1;
                f.weight = w.data(), f.weight_i = cols, f.weight_j = 1;
                f.t = t, f.l = l, f.n = n;
                f.acc = acc.data(), f.acc_t = n, f.acc_j = 1;
                core.run(f);
                const std::int64_t want = l == 1 ? std::int64_t{1} << 62
                                          : mode == overflow_mode::wrap
                                              ? std::numeric_limits<std::int64_t>::min()
                                              : std::numeric_limits<std::int64_t>::max();
                for (auto v : acc)
                    EXPECT_EQ(v, want) << "R=" << rows << " L=" << l;
                // Columns j >= n hold padding weights (zero): nothing to overflow there.
                EXPECT_EQ(core.overflows_in(rows, cols), l == 1 ? 0u : t * n) << "R=" << rows << " L=" << l;
                EXPECT_EQ(core.overflows_in(1, cols), 0u) << "R=" << rows << " L=" << l;
                // A second fold added in: 2^62 + 2^62 overflows the add; the saturated sum stays put.
                if (l == 1) {
                    f.combine = true;
                    core.run(f);
                    for (auto v : acc)
                        EXPECT_EQ(v, mode == overflow_mode::wrap ? std::numeric_limits<std::int64_t>::min()
                                                                 : std::numeric_limits<std::int64_t>::max());
                    EXPECT_EQ(core.partial_overflows(), t * n);
                }
            }
        }
    }
}

// ---- A planted fault

// A preload one edge short leaves every weight one row up (PE(i, j) holds w(i + 1, j)) and the last
// row as it was (zero after the clear). With positive operands and weights that fall down the rows,
// every output of the faulty array is smaller: each of its terms is, and it has one fewer.
TEST(StationaryCore, PreloadOneEdgeShortChangesTheResult) {
    const std::size_t rows = 4, cols = 3;
    const u64 t = 6;
    std::vector<std::int32_t> s(t * rows), w(rows * cols);
    for (std::size_t e = 0; e < s.size(); ++e)
        s[e] = std::int32_t(1 + e % 5);
    for (std::size_t e = 0; e < w.size(); ++e)
        w[e] = std::int32_t(10 * (rows - e / cols) + e % cols);  // falling down the rows
    auto run = [&](u64 preload, stationary_core<int32_format>& core) {
        std::vector<std::int64_t> acc(t * cols, 0);
        stationary_core<int32_format>::fold f;
        f.stream = s.data(), f.stream_t = rows, f.stream_i = 1;
        f.weight = w.data(), f.weight_i = cols, f.weight_j = 1;
        f.t = t, f.l = rows, f.n = cols;
        f.acc = acc.data(), f.acc_t = cols, f.acc_j = 1;
        core.preload(f, 0, preload);
        core.stream(f, 0, core.stream_length(f));
        return acc;
    };
    stationary_core<int32_format> good(rows, cols), faulty(rows, cols);
    const auto want = run(rows, good), got = run(rows - 1, faulty);
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < cols; ++j) {
            EXPECT_EQ(good.weight(i, j), w[i * cols + j]);
            EXPECT_EQ(faulty.weight(i, j), i + 1 < rows ? w[(i + 1) * cols + j] : 0);
        }
    }
    for (std::size_t e = 0; e < want.size(); ++e) {
        std::int64_t sum = 0;
        for (std::size_t i = 0; i < rows; ++i)
            sum += std::int64_t{s[(e / cols) * rows + i]} * w[i * cols + e % cols];
        EXPECT_EQ(want[e], sum) << e;
        EXPECT_LT(got[e], want[e]) << e;
    }
    EXPECT_EQ(faulty.preload_edges(), rows - 1);
    EXPECT_TRUE(faulty.complete(t));  // the stream itself was whole: only the weights are off
}

// ---- Edges of the interface

TEST(StationaryCore, RejectsFoldsThatDoNotFit) {
    EXPECT_THROW(stationary_core<fp32_format>(0, 3), std::invalid_argument);
    EXPECT_THROW(stationary_core<fp32_format>(3, 0), std::invalid_argument);
    stationary_core<fp32_format> core(3, 2);
    std::vector<float> s(64, 1.0f), w(64, 1.0f), acc(64, 0.0f);
    stationary_core<fp32_format>::fold f;
    f.stream = s.data(), f.stream_t = 4, f.stream_i = 1;
    f.weight = w.data(), f.weight_i = 4, f.weight_j = 1;
    f.t = 2, f.l = 4, f.n = 2;  // four terms on three rows
    f.acc = acc.data(), f.acc_t = 4, f.acc_j = 1;
    EXPECT_THROW(core.preload(f, 0, 1), std::invalid_argument);
    EXPECT_THROW(core.stream(f, 0, 1), std::invalid_argument);
    f.l = 3, f.n = 3;  // three columns on two
    EXPECT_THROW(core.preload(f, 0, 1), std::invalid_argument);
    f.n = 2;
    core.run(f);
    EXPECT_EQ(acc[0], 3.0f);
    EXPECT_EQ(core.edges(), 3u + 2 + 3 + 2 - 2);
    core.clear();
    EXPECT_EQ(core.edges(), 0u);
    EXPECT_EQ(core.macs(), 0u);
    EXPECT_TRUE(core.complete(0));
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 2; ++j) {
            EXPECT_FALSE(core.a(i, j).valid);
            EXPECT_EQ(core.weight(i, j), 0.0f);
            EXPECT_EQ(core.psum(i, j), 0.0f);
        }
}

TEST(StationaryCore, HeapBytesCountsItsBuffers) {
    // Four 2RC buffers (two of operands, the valid flags, the sums) and two RC counters, one heap
    // block each: at 16 x 16 with fp32, 2 x 2048 + 512 + 2048 + 2 x 1024 bytes of payload.
    EXPECT_EQ(stationary_core<fp32_format>::heap_bytes(16, 16), 2 * 2064 + 528 + 2064 + 2 * 1040u);
    EXPECT_EQ(stationary_core<int8_format>::heap_bytes(1, 1), 32 * 6u);
}

}  // namespace
