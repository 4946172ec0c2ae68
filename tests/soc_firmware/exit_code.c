/* main's return value is the finisher's code: 7 ends systolic-soc with exit status 1. */
int main(void) {
    return 7;
}
