// The fuzz targets link libsystemc through the model's rules (job.h names sc_time), and
// libsystemc's own main() refers to sc_main. libFuzzer's main() is the one that runs, so this is
// never called; it only satisfies the linker.
extern "C" int sc_main(int, char*[]) {
    return 0;
}
