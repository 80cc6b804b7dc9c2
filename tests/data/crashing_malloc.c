/* A real allocator that crashes: it serves malloc/free from glibc's own entry points until the process has
 * made CRASH_AFTER allocations (HB_CRASH_AFTER, default 400000), then dies the way a buggy allocator does:
 * a SIGSEGV (HB_CRASH_HOW=segv, default) or an abort() (HB_CRASH_HOW=abort). Built by the tests. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static unsigned long calls, limit;
static int how_abort;

__attribute__((constructor)) static void setup(void) {
    const char *after = getenv("HB_CRASH_AFTER"), *how = getenv("HB_CRASH_HOW");
    limit = after ? strtoul(after, 0, 10) : 400000UL;
    how_abort = how && strcmp(how, "abort") == 0;
}

static void count(void) {
    if (limit && ++calls == limit) {
        if (how_abort) abort();
        raise(SIGSEGV);
    }
}

void *malloc(size_t n) { count(); return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t a, size_t b) { count(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
