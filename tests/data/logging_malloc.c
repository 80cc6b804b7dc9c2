/* glibc's malloc, telling stderr about every request of 1 MiB or more ("malloc SIZE", in order): shows the
 * order in which a program takes its big blocks. Built by the tests. */
#include <stdio.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);

void *malloc(size_t n) {
    if (n >= (1u << 20)) {
        char line[48];
        int len = snprintf(line, sizeof line, "malloc %zu\n", n);
        if (len > 0 && write(2, line, (size_t)len) < 0) return NULL;
    }
    return __libc_malloc(n);
}
