/* glibc's malloc, telling stderr about every request of 1 MiB or more ("malloc SIZE", in order), and
 * operator new[]/delete[] (the C++ array forms, by their mangled names) counted and passed to malloc/free,
 * the counts printed at exit ("new[] N delete[] M"). Shows which calls a program makes and in which order
 * it takes its big blocks. Built by the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);

static unsigned long news, deletes;

static void say(const char *line, int len) {
    if (len > 0 && write(2, line, (size_t)len) < 0) _exit(99);
}

void *malloc(size_t n) {
    if (n >= (1u << 20)) {
        char line[48];
        say(line, snprintf(line, sizeof line, "malloc %zu\n", n));
    }
    return __libc_malloc(n);
}

void *_Znam(size_t n) { /* operator new[](size_t) */
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    ++news;
    return p;
}

void _ZdaPv(void *p) { /* operator delete[](void*) */
    if (p) ++deletes;
    free(p);
}

__attribute__((destructor)) static void report(void) {
    char line[64];
    say(line, snprintf(line, sizeof line, "new[] %lu delete[] %lu\n", news, deletes));
}
