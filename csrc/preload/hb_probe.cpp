// libhbprobe.so: what a program we did not write really ran under, told from inside it.
//
//   LD_PRELOAD="<allocator.so> libhbprobe.so" HB_PROBE_DIR=DIR program ...
//
// Loaded into every process of the measured program (the variables are inherited across fork and exec), it
// writes, when HB_PROBE_DIR is set:
//  * at load: DIR/probe-<pid>.json: pid, ppid, exe, LD_PRELOAD, the real path of the objects that `malloc`
//    and `free` resolve to (dladdr of dlsym(RTLD_DEFAULT)), and the allocator's own view of its knobs under
//    "knobs" (the keys of hugebench.machine.allocators.probe_knobs()), and under "api" the object each malloc
//    library's own entry point resolves to (mallctl, nallocx, mi_version, tc_malloc: a library the program
//    links stays mapped and answers them). When a pid execs another program, the name
//    is taken: the later image writes probe-<pid>-<n>.json (n = 1, 2, ...) instead of overwriting it.
//  * at exit(): DIR/exit-<pid>.json: the kB fields of /proc/self/smaps_rollup and VmHWM, in bytes: the
//    coverage at the end, which the parent cannot read once the process is gone. A process that ends by
//    _exit(), exec or a signal writes none.
//  Both records carry "comm" (PR_GET_NAME) and "thp_disable", prctl(PR_GET_THP_DISABLE) of the process then: 0 none, 1 THP disabled
//  completely, 3 disabled except where advised (Linux 6.18's PR_THP_DISABLE_EXCEPT_ADVISED); only the
//  process itself can ask, and a program may set it after load (redis does), hence the exit record too.
// Rules for a guest in any program: no exported symbol (a version script hides everything), no C++ runtime
// (no exceptions, no libstdc++ at run time), no allocation of our own, errno as we found it, silence on any
// failure (the Python side reports missing files), and files appear whole (written to a temp name, renamed).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// A JSON object written through a fixed buffer to a file descriptor; no allocation, any length.
struct JsonOut {
    int fd;
    bool ok = true;
    int depth = 0;
    bool first[4] = {true, true, true, true};  // per nesting level: no member written yet
    size_t used = 0;
    char buf[4096];

    explicit JsonOut(int f) : fd(f) {}

    void flush() {
        size_t done = 0;
        while (ok && done < used) {
            ssize_t n = write(fd, buf + done, used - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) ok = false;
            else done += static_cast<size_t>(n);
        }
        used = 0;
    }
    void put(char c) {
        if (used == sizeof buf) flush();
        buf[used++] = c;
    }
    void raw(const char* s) {
        while (*s) put(*s++);
    }
    void string(const char* s) {
        static const char hex[] = "0123456789abcdef";
        put('"');
        for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p; ++p) {
            if (*p == '"' || *p == '\\') {
                put('\\');
                put(static_cast<char>(*p));
            } else if (*p < 0x20) {
                raw("\\u00");
                put(hex[*p >> 4]);
                put(hex[*p & 15]);
            } else {
                put(static_cast<char>(*p));  // file names are bytes; Python decodes them with "replace"
            }
        }
        put('"');
    }
    void key(const char* k) {
        put(first[depth] ? '{' : ',');
        first[depth] = false;
        string(k);
        put(':');
    }
    void begin(const char* k) {  // a nested object as the value of k
        key(k);
        first[++depth] = true;
    }
    void end() {
        raw(first[depth] ? "{}" : "}");
        --depth;
    }
    void text(const char* k, const char* v) {
        key(k);
        if (v) string(v);
        else raw("null");
    }
    void number(const char* k, long long v) {
        char digits[32];
        std::snprintf(digits, sizeof digits, "%lld", v);
        key(k);
        raw(digits);
    }
    void boolean(const char* k, bool v) {
        key(k);
        raw(v ? "true" : "false");
    }
    bool close() {
        raw(first[0] ? "{}\n" : "}\n");
        flush();
        return ok;
    }
};


// Writes DIR/<name> whole or not at all: a temp file in DIR, then a rename, or a link when an existing file
// of that name must be kept.
class AtomicFile {
  public:
    AtomicFile(const char* dir, const char* name) {
        bool fits = std::snprintf(final_, sizeof final_, "%s/%s", dir, name) < static_cast<int>(sizeof final_) &&
                    std::snprintf(tmp_, sizeof tmp_, "%s/.%s.tmp", dir, name) < static_cast<int>(sizeof tmp_);
        fd_ = fits ? open(tmp_, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    }
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    int fd() const { return fd_; }
    // 0 once published under the final name, else an errno value (EEXIST: keep_existing found one there).
    int commit(bool written, bool keep_existing) {
        int error = close(fd_) == 0 && written ? 0 : EIO;
        if (!error) error = keep_existing ? publish_new() : (rename(tmp_, final_) == 0 ? 0 : errno);
        unlink(tmp_);  // left over after a link, or after a failure; gone (ENOENT) after a rename
        return error;
    }

  private:
    // link() never replaces; where the file system has no hard links, rename() unless the name is taken
    // (only the images of one pid, one after the other, ever compete for a name).
    int publish_new() {
        if (link(tmp_, final_) == 0) return 0;
        if (errno == EEXIST || access(final_, F_OK) == 0) return EEXIST;
        return rename(tmp_, final_) == 0 ? 0 : errno;
    }

    char final_[PATH_MAX];
    char tmp_[PATH_MAX];
    int fd_ = -1;
};

// Captured at load: the program may change its environment before it exits. Zero-initialised, so no
// static constructor of ours runs besides hb_probe_load.
char probe_dir[PATH_MAX];

void read_exe(char (&out)[PATH_MAX]) {
    ssize_t n = readlink("/proc/self/exe", out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
}

// Does the object that `address` lies in really define `symbol` there? A non-PIE executable that takes
// malloc's address has a "canonical PLT entry": dlsym(RTLD_DEFAULT) returns that stub in the executable,
// whose dynamic symbol is undefined (st_shndx == SHN_UNDEF); the code behind it is elsewhere.
bool defines(void* address) {
    Dl_info info{};
    void* entry = nullptr;
    if (!address || !dladdr1(address, &info, &entry, RTLD_DL_SYMENT)) return false;
    const auto* sym = static_cast<const ElfW(Sym)*>(entry);
    return sym != nullptr && sym->st_shndx != SHN_UNDEF;
}

void real_name(const char* name, const char* exe, char (&out)[PATH_MAX]) {
    name = (name && *name) ? name : exe;  // the main program's map has no name
    if (!realpath(name, out)) std::snprintf(out, sizeof out, "%s", name);
}

// The real path of the object whose `symbol` the program's calls reach: the first object in the global
// search order (the program, then LD_PRELOAD, then the libraries it needs) that defines it; "" when unknown.
void provider_of(const char* symbol, const char* exe, char (&out)[PATH_MAX]) {
    out[0] = '\0';
    void* address = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info{};
    if (!address || !dladdr(address, &info)) return;
    if (defines(address)) return real_name(info.dli_fname, exe, out);
    void* self = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
    link_map* map = nullptr;
    if (!self || dlinfo(self, RTLD_DI_LINKMAP, &map) != 0) return;
    for (link_map* object = map ? map->l_next : nullptr; object; object = object->l_next) {  // skip the program
        void* handle = dlopen(object->l_name, RTLD_LAZY | RTLD_NOLOAD);
        void* found = handle ? dlsym(handle, symbol) : nullptr;  // searches the object, then its own needs
        Dl_info where{};
        if (found && defines(found) && dladdr(found, &where) && where.dli_fname && object->l_name &&
            std::strcmp(where.dli_fname, object->l_name) == 0) {
            return real_name(object->l_name, exe, out);
        }
    }
}

// The allocator's own view of its knobs, keyed like hugebench.machine.allocators.probe_knobs().
void write_knobs(JsonOut& json) {
    json.begin("knobs");
    using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
    if (auto mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"))) {
        static const char* const options[] = {"opt.thp", "opt.metadata_thp"};
        for (const char* option : options) {
            const char* value = nullptr;
            size_t size = sizeof value;
            char key[48];
            std::snprintf(key, sizeof key, "jemalloc.%s", option);
            if (mallctl(option, &value, &size, nullptr, 0) == 0 && value) json.text(key, value);
        }
        bool hpa = false;  // jemalloc 5.3's huge-page allocator; its hugify delay only when it is on
        size_t size = sizeof hpa;
        if (mallctl("opt.hpa", &hpa, &size, nullptr, 0) == 0) {
            json.boolean("jemalloc.opt.hpa", hpa);
            uint64_t delay = 0;
            size = sizeof delay;
            if (hpa && mallctl("opt.hpa_hugify_delay_ms", &delay, &size, nullptr, 0) == 0)
                json.number("jemalloc.opt.hpa_hugify_delay_ms", static_cast<long long>(delay));
        }
    }
    auto version = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "mi_version"));
    auto enabled = reinterpret_cast<bool (*)(int)>(dlsym(RTLD_DEFAULT, "mi_option_is_enabled"));
    if (version && enabled) {
        int v = version();
        json.number("mimalloc.version", v);
        // mi_option_large_os_pages is option 6 throughout mimalloc 2.x
        if (200 <= v && v < 300) json.boolean("mimalloc.large_os_pages", enabled(6));
    }
    json.end();
}

// Where each malloc library's own entry points resolve (jemalloc's mallctl/nallocx, mimalloc's mi_version,
// tcmalloc's tc_malloc): a program linked with an allocator keeps it mapped, and these still answer from it
// after a preload made malloc/free resolve elsewhere. Under "api": symbol -> real path of its object.
void write_api(JsonOut& json, const char* exe) {
    static const char* const symbols[] = {"mallctl", "nallocx", "mi_version", "tc_malloc"};
    json.begin("api");
    char from[PATH_MAX];
    for (const char* symbol : symbols) {
        provider_of(symbol, exe, from);
        if (from[0]) json.text(symbol, from);
    }
    json.end();
}

// The fields each record starts with: which process wrote it.
void write_identity(JsonOut& json, int pid, const char* exe) {
    json.number("pid", pid);
    json.number("ppid", static_cast<long long>(getppid()));
    json.text("exe", exe);
    char comm[17] = {0};  // the name it was run by (a link's name, not its target's), TASK_COMM_LEN
    if (prctl(PR_GET_NAME, comm, 0L, 0L, 0L) == 0) json.text("comm", comm);
    const int thp = prctl(PR_GET_THP_DISABLE, 0L, 0L, 0L, 0L);
    if (thp >= 0) json.number("thp_disable", thp);
}

void write_probe() {
    char exe[PATH_MAX], malloc_from[PATH_MAX], free_from[PATH_MAX];
    read_exe(exe);
    provider_of("malloc", exe, malloc_from);
    provider_of("free", exe, free_from);
    const int pid = static_cast<int>(getpid());
    // A pid that execs keeps its number: each image gets its own file, the first one the plain name.
    for (int image = 0; image < 1000; ++image) {
        char name[64];
        if (image == 0) std::snprintf(name, sizeof name, "probe-%d.json", pid);
        else std::snprintf(name, sizeof name, "probe-%d-%d.json", pid, image);
        AtomicFile file(probe_dir, name);
        if (file.fd() < 0) return;
        JsonOut json(file.fd());
        write_identity(json, pid, exe);
        json.number("image", image);
        json.text("preload", std::getenv("LD_PRELOAD"));
        json.text("malloc", malloc_from);
        json.text("free", free_from);
        write_knobs(json);
        write_api(json, exe);
        if (file.commit(json.close(), true) != EEXIST) return;
    }
}

// The whole of a small /proc file, NUL-terminated (truncated to the buffer); false when unreadable.
bool read_proc(const char* path, char* buf, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t used = 0;
    while (used + 1 < size) {
        ssize_t n = read(fd, buf + used, size - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += static_cast<size_t>(n);
    }
    close(fd);
    buf[used] = '\0';
    return used > 0;
}

// Each "Name:   123 kB" line of `text` whose name is in `names`, written as "Name": bytes.
void write_kb_fields(JsonOut& json, const char* text, const char* const* names, size_t count) {
    for (const char* line = text; *line;) {
        const char* end = std::strchr(line, '\n');
        const char* colon = std::strchr(line, ':');
        for (size_t i = 0; colon && (!end || colon < end) && i < count; ++i) {
            size_t len = std::strlen(names[i]);
            if (static_cast<size_t>(colon - line) != len || std::strncmp(line, names[i], len) != 0) continue;
            char* after = nullptr;
            long long kb = std::strtoll(colon + 1, &after, 10);
            while (*after == ' ') ++after;
            if (after != colon + 1 && std::strncmp(after, "kB", 2) == 0) json.number(names[i], kb * 1024);
        }
        if (!end) break;
        line = end + 1;
    }
}

void write_exit() {
    static const char* const rollup_fields[] = {"Rss", "AnonHugePages", "FilePmdMapped", "ShmemPmdMapped",
                                                "Private_Hugetlb", "Shared_Hugetlb", "Anonymous"};
    static const char* const status_fields[] = {"VmHWM"};
    char text[8192], exe[PATH_MAX], name[64];
    const int pid = static_cast<int>(getpid());
    std::snprintf(name, sizeof name, "exit-%d.json", pid);
    read_exe(exe);
    AtomicFile file(probe_dir, name);
    if (file.fd() < 0) return;
    JsonOut json(file.fd());
    write_identity(json, pid, exe);
    if (read_proc("/proc/self/smaps_rollup", text, sizeof text))
        write_kb_fields(json, text, rollup_fields, sizeof rollup_fields / sizeof *rollup_fields);
    if (read_proc("/proc/self/status", text, sizeof text))
        write_kb_fields(json, text, status_fields, sizeof status_fields / sizeof *status_fields);
    file.commit(json.close(), false);
}

__attribute__((constructor, used)) void hb_probe_load() {
    const int saved = errno;
    const char* dir = std::getenv("HB_PROBE_DIR");
    size_t len = dir ? std::strlen(dir) : 0;
    if (len > 0 && len < sizeof probe_dir) {
        std::memcpy(probe_dir, dir, len + 1);
        write_probe();
    }
    errno = saved;
}

__attribute__((destructor, used)) void hb_probe_exit() {
    const int saved = errno;
    if (probe_dir[0]) write_exit();
    errno = saved;
}

}  // namespace

// The one exported symbol, under a name no program uses: the worker of a built-in workload asks the same
// question of itself through ctypes (hugebench.machine.allocators.malloc_provider), so both answer it one way.
extern "C" __attribute__((visibility("default"))) int hb_probe_provider(const char* symbol, char* out,
                                                                         size_t size) {
    char exe[PATH_MAX], found[PATH_MAX];
    read_exe(exe);
    provider_of(symbol, exe, found);
    if (!found[0] || std::strlen(found) >= size) return -1;
    std::memcpy(out, found, std::strlen(found) + 1);
    return 0;
}
