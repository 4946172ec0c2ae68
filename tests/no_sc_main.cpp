// Plain C++ tests still link libsystemc when they touch tlm_generic_payload or sc_time, and
// libsystemc's own main() refers to sc_main. GoogleTest's main() in the executable takes
// precedence, so this is never called; it only satisfies the linker (with the C linkage
// SystemC declares it with).
extern "C" int sc_main(int, char*[]) {
    return 0;
}
