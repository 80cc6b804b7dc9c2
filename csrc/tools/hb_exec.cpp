// hb-exec: run one command as a child and record how it really ended.
//
//   hb-exec STATUS_FILE [NAME=VALUE ...] -- PROGRAM [ARG ...]
//
// Sits between the sweep (or `perf stat`) and the measured process, for two reasons:
//  * perf stat exits 0 when its workload dies of a signal, so the sweep cannot see a crash or an OOM kill
//    through it. hb-exec reaps the child with wait4() and writes its exit code or signal, and its rusage,
//    to STATUS_FILE as one JSON object (replaced atomically), then exits with the child's code (128+signal).
//  * No process may outlive the sweep. hb-exec is a child subreaper: whatever the child leaves running (a
//    daemon that forked and called setsid) is reparented to hb-exec or a subreaper below it, so every process
//    the child started stays a descendant of hb-exec while hb-exec lives. When its parent dies (the sweep
//    killed with -9, or perf around us), the kernel sends hb-exec SIGRTMIN (PR_SET_PDEATHSIG), and hb-exec
//    kills all its descendants, daemons included, before it exits. When the child ends, hb-exec kills what
//    it left behind and counts it in the status ("leftover_processes"). (What survives a SIGKILL of hb-exec
//    itself is the sweep's to end: its run cgroup, or its record of the run's processes.)
//  * The child's pid goes to STATUS_FILE.pid as soon as it exists (the runner samples its memory), and its
//    wall time from fork to exit goes in the status ("wall_s"; perf's own start-up is not in it), with its
//    CPU migrations ("nr_migrations", read from /proc/PID/sched between its exit and its reaping; -1: unknown).
//
//   hb-exec --enter READY_FD [CGROUP_PROCS_FILE ...] -- COMMAND [ARG ...]
//
// The other form starts a process for the sweep: it asks to be killed when its parent (the sweep) dies, joins
// each cgroup whose cgroup.procs file is named (the run's, and its memory limit's), closes READY_FD (the
// sweep waits for its end of that pipe to see EOF before it checks where the process is) and then becomes
// COMMAND (exec, same pid), so that COMMAND and all it starts are the run's from their first instruction.
// It is what the sweep's Python would otherwise do between fork and exec, which forces a full fork() of a
// large process instead of a vfork (5-20 ms a run here). A move the kernel refuses is left for the sweep to
// find (it checks the process's cgroup once it runs).
// NAME=VALUE pairs are set in the child's environment only, so the allocator under test (LD_PRELOAD) is in
// force in the measured process and in no process around it. Tiny and allocation-light on purpose: perf
// counts it too.
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace {

void die_with_parent(pid_t expected_parent, int sig) {
    prctl(PR_SET_PDEATHSIG, sig);
    if (getppid() != expected_parent) _exit(125);  // the parent died before the prctl took
}

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

bool write_file(const std::string& path, const char* body, size_t n) {
    std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) return false;
    bool ok = std::fwrite(body, 1, n, f) == n;
    ok = (std::fclose(f) == 0) && ok;
    return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Every process below us (children, and the orphans reparented to this subreaper with their trees).
int descendants(pid_t root, pid_t* out, int cap) {
    static pid_t pids[65536], parents[65536];
    int n = 0;
    if (DIR* proc = opendir("/proc")) {
        while (dirent* entry = readdir(proc)) {
            if (n == 65536) break;
            if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
            char path[300], buf[512];
            std::snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
            FILE* f = std::fopen(path, "r");
            if (!f) continue;
            size_t len = std::fread(buf, 1, sizeof buf - 1, f);
            std::fclose(f);
            buf[len] = 0;
            const char* close = std::strrchr(buf, ')');  // comm may hold spaces and parentheses
            char state = 0;
            int ppid = 0;
            if (!close || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2 || state == 'Z') continue;
            pids[n] = static_cast<pid_t>(std::atoi(entry->d_name));
            parents[n++] = static_cast<pid_t>(ppid);
        }
        closedir(proc);
    }
    int found = 0;
    out[found++] = root;  // breadth first from root; out[0] is root itself
    for (int i = 0; i < found; ++i)
        for (int j = 0; j < n; ++j)
            if (parents[j] == out[i] && found < cap) out[found++] = pids[j];
    return found - 1;
}

// SIGKILL every descendant until none is left (a forking tree too); reap what comes back to us.
int kill_descendants() {
    static pid_t tree[65536];
    int killed = 0;
    for (int round = 0; round < 100; ++round) {
        int found = descendants(getpid(), tree, 65536);
        for (int i = 1; i <= found; ++i)
            if (kill(tree[i], SIGKILL) == 0) ++killed;
        while (waitpid(-1, nullptr, WNOHANG) > 0) {}
        if (!found) break;
        usleep(10000);
    }
    return killed;
}

double now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// The child's CPU migrations (se.nr_migrations of /proc/PID/sched), read while it is a zombie: after it has
// exited and before we reap it, when nothing else can read them. Its main thread's count (threads that ended
// earlier are gone); -1 when the kernel does not say (no CONFIG_SCHED_DEBUG).
long migrations(pid_t child) {
    char path[64], buf[8192];
    std::snprintf(path, sizeof path, "/proc/%d/sched", static_cast<int>(child));
    FILE* f = std::fopen(path, "r");
    if (!f) return -1;
    size_t len = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[len] = 0;
    const char* at = std::strstr(buf, "se.nr_migrations");
    const char* colon = at ? std::strchr(at, ':') : nullptr;
    return colon ? std::strtol(colon + 1, nullptr, 10) : -1;
}

// Wait until the child has exited without reaping it (its /proc entry stays readable), then reap it.
pid_t exited(pid_t child, int* status, rusage* ru, long* migrated) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
        if (info.si_pid != child) return 0;  // still running: its SIGCHLD wakes the caller's sigwaitinfo
        *migrated = migrations(child);
    }
    return wait4(child, status, WNOHANG, ru);
}

bool write_status(const char* path, int status, const rusage& ru, int leftovers, double wall, long migrated) {
    char body[760];
    const char* how = WIFSIGNALED(status) ? "signal" : "exit_code";
    int value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    int n = std::snprintf(body, sizeof body,
                          "{\"%s\": %d, \"core_dumped\": %s, \"utime_s\": %.6f, \"stime_s\": %.6f, "
                          "\"maxrss_kib\": %ld, \"minflt\": %ld, \"majflt\": %ld, \"nvcsw\": %ld, "
                          "\"nivcsw\": %ld, \"leftover_processes\": %d, \"wall_s\": %.6f, "
                          "\"nr_migrations\": %ld}\n",
                          how, value, (WIFSIGNALED(status) && WCOREDUMP(status)) ? "true" : "false",
                          seconds(ru.ru_utime), seconds(ru.ru_stime), ru.ru_maxrss, ru.ru_minflt,
                          ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw, leftovers, wall, migrated);
    return n > 0 && write_file(path, body, static_cast<size_t>(n));
}

}  // namespace

// hb-exec --enter READY_FD FILE... -- COMMAND: die with the parent, join the cgroups, become COMMAND.
int enter_and_exec(int argc, char** argv) {
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);  // the sweep died before the prctl took
    if (argc < 3) return 125;
    int ready = std::atoi(argv[2]);
    int i = 3;
    char pid_text[32];
    int pid_len = std::snprintf(pid_text, sizeof pid_text, "%d", static_cast<int>(getpid()));
    for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        FILE* f = std::fopen(argv[i], "w");
        if (!f) continue;  // the sweep sees where the process is and says why
        std::fwrite(pid_text, 1, static_cast<size_t>(pid_len), f);
        std::fclose(f);
    }
    if (ready > 2) close(ready);  // the sweep may look now
    if (i + 1 >= argc) {
        std::fprintf(stderr, "usage: hb-exec --enter READY_FD [CGROUP_PROCS_FILE ...] -- COMMAND [ARG ...]\n");
        return 125;
    }
    execvp(argv[i + 1], argv + i + 1);
    std::fprintf(stderr, "hb-exec: cannot run %s: %s\n", argv[i + 1], std::strerror(errno));
    return 127;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--enter") == 0) return enter_and_exec(argc, argv);
    int sep = 2;
    while (sep < argc && std::strcmp(argv[sep], "--") != 0) ++sep;
    if (argc < 2 || sep + 1 >= argc) {
        std::fprintf(stderr, "usage: hb-exec STATUS_FILE [NAME=VALUE ...] -- PROGRAM [ARG ...]\n");
        return 125;
    }
    // The parent's death and our children's ends are taken with sigwaitinfo: blocked from here on, so
    // neither can slip in between a check and a wait.
    sigset_t wanted, old_mask;
    sigemptyset(&wanted);
    sigaddset(&wanted, SIGCHLD);
    sigaddset(&wanted, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &wanted, &old_mask);
    die_with_parent(getppid(), SIGRTMIN);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t me = getpid();
    double started = now();
    pid_t child = fork();
    if (child < 0) {
        std::perror("hb-exec: fork");
        return 125;
    }
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &old_mask, nullptr);
        die_with_parent(me, SIGKILL);
        for (int i = 2; i < sep; ++i) {
            if (!std::strchr(argv[i], '=') || putenv(argv[i]) != 0) {
                std::fprintf(stderr, "hb-exec: bad environment assignment '%s'\n", argv[i]);
                _exit(125);
            }
        }
        execvp(argv[sep + 1], argv + sep + 1);
        std::fprintf(stderr, "hb-exec: cannot run %s: %s\n", argv[sep + 1], std::strerror(errno));
        _exit(127);
    }
    char pid_text[32];
    int pid_len = std::snprintf(pid_text, sizeof pid_text, "%d\n", static_cast<int>(child));
    write_file(std::string(argv[1]) + ".pid", pid_text, static_cast<size_t>(pid_len));
    // Ctrl-C reaches the whole process group; the child decides what it means, we only report it.
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
    int status = 0;
    rusage ru{};
    long migrated = -1;
    for (;;) {
        pid_t done = exited(child, &status, &ru, &migrated);
        if (done == child) break;
        if (done < 0 && errno != EINTR) {
            std::perror("hb-exec: wait4");
            return 125;
        }
        if (sigwaitinfo(&wanted, nullptr) == SIGRTMIN) {  // the sweep is gone: so is everything it ran
            kill_descendants();
            return 128 + SIGKILL;
        }
    }
    double wall = now() - started;
    int leftovers = kill_descendants();
    if (!write_status(argv[1], status, ru, leftovers, wall, migrated)) std::fprintf(stderr, "hb-exec: cannot write %s\n", argv[1]);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
