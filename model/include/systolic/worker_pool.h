// A small pool of threads that run one task at a time, all together: run(task) calls task(t) for
// every t in [0, size()), t = 0 on the calling thread, and returns when all have finished. The
// fabric engine steps its arrays with it, one call per group of edges (docs/fabric.md), so a call
// must cost far less than stepping an array: a worker spins for a short while before it sleeps, and
// run() wakes sleepers only when there are any. With one thread, run() is a plain call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace systolic {

class worker_pool {
public:
    explicit worker_pool(unsigned threads = 1);
    ~worker_pool();
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    unsigned size() const { return unsigned(m_workers.size()) + 1; }
    void run(const std::function<void(unsigned)>& task);

    // For a thread that waits on others, on its `calls`-th try in a row: a pause instruction for
    // the first few thousand (the others are usually microseconds away), then a yield of the core,
    // which matters when the machine has fewer free cores than threads.
    static void wait_a_little(unsigned calls);

private:
    void work(unsigned index);

    std::vector<std::thread> m_workers;
    const std::function<void(unsigned)>* m_task = nullptr;
    std::atomic<std::uint64_t> m_generation{0};  // one more for every run() (and for the stop)
    std::atomic<unsigned> m_done{0};             // workers finished with the current run()
    std::atomic<unsigned> m_sleepers{0};
    std::atomic<bool> m_stop{false};
    std::mutex m_mutex;
    std::condition_variable m_wake;
};

}  // namespace systolic
