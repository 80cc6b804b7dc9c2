/* hugebench_window.h: mark the timed window of a program measured by hugebench (the `command` workload).
 *
 *   hugebench_window_enable();   ... the part worth measuring ...   hugebench_window_disable();
 *
 * Each call writes "enable\n" / "disable\n" to the FIFO named by HUGEBENCH_CTL and waits for one line
 * ("ack\n") on the FIFO named by HUGEBENCH_ACK, so the counters really run (or stop) before the program
 * goes on. Without both variables (not run by hugebench), or with nobody reading the FIFO, the calls do
 * nothing. Header-only, C and C++. */
#ifndef HUGEBENCH_WINDOW_H
#define HUGEBENCH_WINDOW_H
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef O_CLOEXEC /* hidden by a strict -std=c99 */
#define HUGEBENCH_CLOEXEC_ O_CLOEXEC
#else
#define HUGEBENCH_CLOEXEC_ 0
#endif

static inline void hugebench_window_word_(const char *word, size_t len) {
    const char *ctl = getenv("HUGEBENCH_CTL"), *ack = getenv("HUGEBENCH_ACK");
    char reply;
    int fd;
    if (!ctl || !ack || !*ctl || !*ack) return;
    /* O_NONBLOCK: fails (ENXIO) rather than waits when no supervisor holds the FIFO open */
    if ((fd = open(ctl, O_WRONLY | O_NONBLOCK | HUGEBENCH_CLOEXEC_)) < 0) return;
    fcntl(fd, F_SETFL, 0);
    ssize_t written = write(fd, word, len); /* shorter than PIPE_BUF: one atomic write */
    close(fd);
    if (written != (ssize_t)len || (fd = open(ack, O_RDONLY | HUGEBENCH_CLOEXEC_)) < 0) return;
    while (read(fd, &reply, 1) == 1 && reply != '\n') {}
    close(fd);
}
static inline void hugebench_window_enable(void) { hugebench_window_word_("enable\n", 7); }
static inline void hugebench_window_disable(void) { hugebench_window_word_("disable\n", 8); }
#endif
