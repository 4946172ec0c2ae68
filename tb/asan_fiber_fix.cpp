// Sanitizer builds only: makes AddressSanitizer's idea of the main stack right again after SystemC
// switches back to it.
//
// Debian's libsystemc announces every coroutine switch to ASan through the weak symbols
// __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber. When it switches back to the
// main coroutine, it passes a stack of bottom 0 and size 0 (it never learnt the main stack's
// bounds), so from then on ASan believes the main stack is empty. Every exception thrown after
// sc_start() then makes __asan_handle_no_return give up ("ASan is ignoring requested
// __asan_handle_no_return"), the unwound frames keep their redzones, and the next call that reuses
// them is reported as a stack-buffer-overflow: a false error and a wrong exit status.
//
// This definition, linked into each executable, takes precedence over ASan's for libsystemc's weak
// references. It forwards every call to ASan unchanged, except that a switch to "bottom 0, size 0"
// (the main coroutine) gets the main thread's real stack bounds. See docs/reliability.md.
#include <dlfcn.h>
#include <pthread.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace {

using start_fn = void (*)(void**, const void*, std::size_t);
using finish_fn = void (*)(void*, const void**, std::size_t*);

struct main_stack {
    const void* bottom = nullptr;
    std::size_t size = 0;
};

main_stack find_main_stack() {
    main_stack s;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* addr = nullptr;
        std::size_t size = 0;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            s.bottom = addr;
            s.size = size;
        }
        pthread_attr_destroy(&attr);
    }
    return s;
}

template <class F>
F next_symbol(const char* name) {
    void* sym = dlsym(RTLD_NEXT, name);
    if (sym == nullptr) {
        std::fprintf(stderr, "asan_fiber_fix: %s not found; is this a sanitizer build?\n", name);
        std::abort();
    }
    return reinterpret_cast<F>(sym);
}

}  // namespace

extern "C" {

void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size) {
    static const start_fn real = next_symbol<start_fn>("__sanitizer_start_switch_fiber");
    static const main_stack main = find_main_stack();  // first called from the main coroutine
    if (bottom == nullptr && size == 0) {
        bottom = main.bottom;
        size = main.size;
    }
    real(fake_stack_save, bottom, size);
}

void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, std::size_t* size_old) {
    static const finish_fn real = next_symbol<finish_fn>("__sanitizer_finish_switch_fiber");
    real(fake_stack_save, bottom_old, size_old);
}

}  // extern "C"
