// Sanitizer builds only: linked into a platform built like a user's (examples/verified_platform: the
// model and verify, nothing of the testbench), it checks at exit that AddressSanitizer believes the
// main thread runs on the main stack. LeakSanitizer's check at exit scans the stack ASan believes
// in; when SystemC's coroutine switches leave it believing in a thread's stack that has since been
// unmapped, the check faults or misses the real stack, depending on the memory layout. This probe
// sees the wrong belief on every layout (model/src/asan_fiber_fix.cpp corrects it).
#include <pthread.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, std::size_t* size_old);
}

namespace {

void check_believed_stack() {
    pthread_attr_t attr;
    void* main_bottom = nullptr;
    std::size_t main_size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
        pthread_attr_getstack(&attr, &main_bottom, &main_size) != 0) {
        std::fprintf(stderr, "asan_stack_probe: cannot read the main thread's stack bounds\n");
        _exit(3);
    }
    pthread_attr_destroy(&attr);
    // A switch from the current stack to the main stack, which is where this runs: ASan answers
    // with the bounds it held for the stack being left, and from then on holds the right ones.
    void* fake = nullptr;
    const void* believed = nullptr;
    std::size_t believed_size = 0;
    __sanitizer_start_switch_fiber(&fake, main_bottom, main_size);
    __sanitizer_finish_switch_fiber(fake, &believed, &believed_size);
    const auto sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    const auto b = reinterpret_cast<std::uintptr_t>(believed);
    if (sp < b || sp - b >= believed_size) {
        std::fprintf(
            stderr,
            "asan_stack_probe: at exit ASan believes the stack is %#lx-%#lx, but the main thread runs at "
            "%#lx (its stack is %p-%#lx)\n",
            static_cast<unsigned long>(b), static_cast<unsigned long>(b + believed_size),
            static_cast<unsigned long>(sp), main_bottom,
            static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(main_bottom) + main_size));
        _exit(3);
    }
    std::fprintf(stderr, "asan_stack_probe: at exit ASan's stack is the main stack\n");
}

// Registered after the sanitizer runtime's own handler, so it runs before the leak check.
const int registered = std::atexit(check_believed_stack);

}  // namespace
