/* Never finishes: --timeout ends it. */
int main(void) {
    for (volatile unsigned i = 0;; ++i) {
    }
}
