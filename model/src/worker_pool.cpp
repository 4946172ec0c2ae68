#include "systolic/worker_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace systolic {

namespace {

void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// Waiting: a few microseconds of pause instructions (the other threads are usually that close),
// then yielding the core, which matters when the machine has fewer free cores than threads; a
// worker that has waited about a millisecond (a load or drain step) sleeps until the next run().
constexpr unsigned spin_limit = 2000;
constexpr unsigned yield_limit = 2000;

}  // namespace

worker_pool::worker_pool(unsigned threads) {
    for (unsigned i = 1; i < threads; ++i)
        m_workers.emplace_back([this, i] { work(i); });
}

worker_pool::~worker_pool() {
    m_stop.store(true);
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_generation.fetch_add(1);
    }
    m_wake.notify_all();
    for (auto& w : m_workers)
        w.join();
}

void worker_pool::run(const std::function<void(unsigned)>& task) {
    if (m_workers.empty()) {
        task(0);
        return;
    }
    m_task = &task;
    m_done.store(0, std::memory_order_relaxed);
    // A worker about to sleep counts itself in m_sleepers and then reads the generation; here the
    // generation moves first and m_sleepers is read after, so one of the two sees the other.
    m_generation.fetch_add(1);
    if (m_sleepers.load() > 0) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_wake.notify_all();
    }
    task(0);
    const unsigned workers = unsigned(m_workers.size());
    for (unsigned spins = 0; m_done.load(std::memory_order_acquire) != workers;)
        wait_a_little(spins++);
}

void worker_pool::wait_a_little(unsigned calls) {
    if (calls < spin_limit)
        relax();
    else
        std::this_thread::yield();
}

void worker_pool::work(unsigned index) {
    std::uint64_t seen = 0;
    for (;;) {
        unsigned spins = 0;
        while (m_generation.load(std::memory_order_acquire) == seen && spins < spin_limit + yield_limit)
            wait_a_little(spins++);
        if (m_generation.load() == seen) {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_sleepers.fetch_add(1);
            m_wake.wait(lock, [&] { return m_generation.load() != seen; });
            m_sleepers.fetch_sub(1);
        }
        seen = m_generation.load(std::memory_order_acquire);
        if (m_stop.load()) return;
        (*m_task)(index);
        m_done.fetch_add(1, std::memory_order_release);
    }
}

}  // namespace systolic
