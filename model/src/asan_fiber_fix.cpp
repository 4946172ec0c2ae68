// Sanitizer builds only: keeps AddressSanitizer's idea of the current stack right across SystemC's
// coroutine switches, in every executable that links the model.
//
// Debian's libsystemc (QuickThreads coroutines) announces its switches to ASan through the weak
// symbols __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, but wrongly in two cases:
//  1. A switch to the main coroutine is announced with bottom 0 and size 0: SystemC never learns the
//     main stack's bounds. ASan then believes the main stack is empty, __asan_handle_no_return
//     ignores every C++ throw after sc_start(), the unwound frames keep their redzones, and the next
//     call that reuses them is reported as a stack-buffer-overflow.
//  2. The switch made when a thread process ends (sc_cor_pkg_qt::abort) is not announced at all.
//     ASan goes on believing that the ended thread's stack is current. When the main coroutine is
//     the one resumed, that belief lasts to exit; SystemC unmaps the stack meanwhile, and
//     LeakSanitizer's check at exit scans the stale range ("stack pointer not in stack range") and
//     faults wherever the memory layout leaves part of it mapped.
//
// The definitions here take precedence over ASan's and libsystemc's for libsystemc's references,
// which go through the dynamic symbol table. Case 1: a switch to "bottom 0, size 0" gets the main
// thread's real stack bounds (pthread_getattr_np). Case 2: sc_cor_qt_aborthelp, which QuickThreads
// calls on the resumed coroutine's stack right after an abort's switch, announces that stack: the
// main stack, or a coroutine stack announced before. Every other call is forwarded unchanged, so
// stack checking stays on everywhere, inside coroutines too. docs/reliability.md has the story and
// the tests that fail without this file.
#include <dlfcn.h>
#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>

namespace {

using start_fn = void (*)(void**, const void*, std::size_t);
using finish_fn = void (*)(void*, const void**, std::size_t*);

struct stack_range {
    const void* bottom = nullptr;
    std::size_t size = 0;
    bool contains(const void* p) const {
        const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(bottom);
        return a >= b && a - b < size;
    }
};

stack_range find_main_stack() {
    stack_range s;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* addr = nullptr;
        std::size_t size = 0;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) s = {addr, size};
        pthread_attr_destroy(&attr);
    }
    return s;
}

// Set up before main(), on the main thread, so that pthread_getattr_np describes the main stack.
const stack_range g_main_stack = find_main_stack();

template <class F>
F next_symbol(const char* name) {
    void* sym = dlsym(RTLD_NEXT, name);
    if (sym == nullptr) {
        std::fprintf(stderr, "asan_fiber_fix: %s not found; is this a sanitizer build?\n", name);
        std::abort();
    }
    return reinterpret_cast<F>(sym);
}

start_fn real_start() {
    static const start_fn f = next_symbol<start_fn>("__sanitizer_start_switch_fiber");
    return f;
}

finish_fn real_finish() {
    static const finish_fn f = next_symbol<finish_fn>("__sanitizer_finish_switch_fiber");
    return f;
}

// The coroutine stacks announced so far, by bottom. A stack unmapped and another mapped over it is
// replaced when the new one is announced, so the ranges never overlap. SystemC runs its coroutines
// on one thread; a switch is announced before and after, never during another.
std::map<std::uintptr_t, std::size_t>& coroutine_stacks() {
    static auto* stacks = new std::map<std::uintptr_t, std::size_t>;  // outlives every switch at exit
    return *stacks;
}

void remember(const void* bottom, std::size_t size) {
    auto& stacks = coroutine_stacks();
    const auto b = reinterpret_cast<std::uintptr_t>(bottom);
    const auto it = stacks.find(b);
    if (it != stacks.end() && it->second == size) return;  // the common case: seen before
    auto first = stacks.lower_bound(b);
    if (first != stacks.begin() && std::prev(first)->first + std::prev(first)->second > b) --first;
    auto last = first;
    while (last != stacks.end() && last->first < b + size)
        ++last;
    stacks.erase(first, last);
    stacks.emplace(b, size);
}

stack_range announced_stack_holding(const void* p) {
    if (g_main_stack.contains(p)) return g_main_stack;
    const auto& stacks = coroutine_stacks();
    auto it = stacks.upper_bound(reinterpret_cast<std::uintptr_t>(p));
    if (it == stacks.begin()) return {};
    --it;
    const stack_range r{reinterpret_cast<const void*>(it->first), it->second};
    return r.contains(p) ? r : stack_range{};
}

}  // namespace

extern "C" {

void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size) {
    if (bottom == nullptr && size == 0) {
        bottom = g_main_stack.bottom;
        size = g_main_stack.size;
    } else {
        remember(bottom, size);
    }
    real_start()(fake_stack_save, bottom, size);
}

void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, std::size_t* size_old) {
    real_finish()(fake_stack_save, bottom_old, size_old);
}

// libsystemc's own helper does nothing but return 0. Ours runs where it does, on the stack that the
// abort resumed, and announces that stack as a switch from the thread that ended, whose fake stack
// ASan may then free (no save slot). A coroutine that has never been switched to by a yield is
// unknown here; it is announced at its first yield, as before.
void* sc_cor_qt_aborthelp(void* /*old_sp*/, void* /*old_cor*/, void* /*unused*/) {
    // The frame address, not a local's: a local may live on ASan's fake stack.
    const stack_range now = announced_stack_holding(__builtin_frame_address(0));
    if (now.size != 0) {
        real_start()(nullptr, now.bottom, now.size);
        real_finish()(nullptr, nullptr, nullptr);
    }
    return nullptr;
}

}  // extern "C"
