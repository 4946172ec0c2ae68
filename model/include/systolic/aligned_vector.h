// A std::vector whose storage starts on a cache line. The array's hot state and the feeder's
// operand rows are read with wide vector loads on every edge; where malloc puts them otherwise
// decides whether those loads split cache lines, which made the same code's speed depend on what
// else the process had allocated before.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace systolic {

inline constexpr std::size_t cache_line = 64;

template <class T>
struct cache_aligned_allocator {
    using value_type = T;
    cache_aligned_allocator() = default;
    template <class U>
    cache_aligned_allocator(const cache_aligned_allocator<U>&) noexcept {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{cache_line}));
    }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{cache_line}); }
    template <class U>
    bool operator==(const cache_aligned_allocator<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const cache_aligned_allocator<U>&) const noexcept {
        return false;
    }
};

template <class T>
using aligned_vector = std::vector<T, cache_aligned_allocator<T>>;

}  // namespace systolic
