/* underused.c: the shrinker pack's workload (hugebench advice shrinker).
 *
 * A sparse heap: WORKERS threads touch TOUCH of every 512 small pages of each 2 MiB block of a REGION_MIB
 * region (the cover letter of "mm: split underused THPs": workers touching 40 of every 512 pages of each
 * huge page). Under THP always each touched block is a whole huge page, 472 of whose 512 pages hold only
 * zeros: what the kernel's underused-THP shrinker splits, under memory pressure, when more than
 * khugepaged/max_ptes_none of a huge page's small pages are zero-filled.
 *
 * PRESSURE none: the heap alone, under the run's memory limit (the reproducer: without the shrinker the
 * kernel cannot give back the zero-filled pages and OOM-kills the program). huge_faults (thp_fault_alloc while it
 * touched the heap, the whole machine's) says whether its huge pages would have fitted under the limit anyway. PRESSURE cache: then the
 * program fills its memory cgroup with dense memory to HEADROOM_MIB below its limit and streams a file of
 * twice the limit through the page cache (FILE: written and dropped from the cache first, unlinked at once),
 * so reclaim runs in the cgroup and finds little else to take: the pressure under which the shrinker acts.
 * The run fails (exit 3) when the cgroup's limit cannot be read or was not reached (v1: its peak usage
 * within 1 MiB of the limit; v2: memory.events max rose): the condition did not hold. Then ACCESS_S seconds of random
 * read-modify-writes over the touched pages (ops_per_s).
 *
 * Prints key=value lines: faulted_huge_kib (AnonHugePages after the heap was touched), huge_faults, pressed_huge_kib
 * (after the pressure), limit_gap_kib (the limit less the cgroup's peak usage during the pressure), underused_splits
 * (/proc/vmstat thp_underused_split_page during the pressure: the whole machine's), sparse_rss_kib and
 * sparse_huge_kib (the heap's own resident memory and huge pages at the end, from /proc/self/smaps),
 * ops_per_s. It volunteers as the OOM killer's victim (oom_score_adj 1000), so a kill under the limit lands
 * on it rather than on the process supervising it.
 *
 * usage: underused REGION_MIB TOUCH WORKERS ACCESS_S none|cache [FILE HEADROOM_MIB]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define HUGE (2UL << 20)
#define PAGE 4096UL
#define PER_HUGE (HUGE / PAGE)
#define MAX_WORKERS 64

static char *heap;
static size_t blocks;
static unsigned touch, workers;
static double access_s;

struct job {
	unsigned id;
	uint64_t ops;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t touched_page(unsigned i) { return (size_t)i * PER_HUGE / touch; }

/* The value of "NAME<sep>N" in a file of such lines, or -1. */
static long long field(const char *path, const char *name, char sep)
{
	char line[512];
	long long v = -1;
	size_t n = strlen(name);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, name, n) && line[n] == sep)
			v = atoll(line + n + 1);
	fclose(f);
	return v;
}

static long long number(const char *path)
{
	char buf[64] = {0};
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = 0;
	fclose(f);
	return strncmp(buf, "max", 3) ? atoll(buf) : -1;
}

/* Rss and AnonHugePages (kB) of the mapping that holds the heap. */
static void heap_smaps(long long *rss, long long *huge)
{
	char line[512];
	int inside = 0;
	FILE *f = fopen("/proc/self/smaps", "r");
	*rss = *huge = -1;
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's header line */
			inside = lo <= (uintptr_t)heap && (uintptr_t)heap < hi;
			continue;
		}
		if (inside && !strncmp(line, "Rss:", 4))
			*rss = atoll(line + 4);
		if (inside && !strncmp(line, "AnonHugePages:", 14))
			*huge = atoll(line + 14);
	}
	fclose(f);
}

static void *touch_blocks(void *arg)
{
	struct job *job = arg;
	for (size_t b = job->id; b < blocks; b += workers)
		for (unsigned i = 0; i < touch; i++)
			memset(heap + b * HUGE + touched_page(i) * PAGE, 0x5a, 64);
	return NULL;
}

static void *access_pages(void *arg)
{
	struct job *job = arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL * (job->id + 1), ops = 0;
	double end = now() + access_s;
	do {
		for (int k = 0; k < 4096; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			char *p = heap + ((x >> 8) % blocks) * HUGE + touched_page((x >> 40) % touch) * PAGE;
			*(volatile char *)(p + ((x >> 20) & 63) * 64) += 1;
		}
		ops += 4096;
	} while (now() < end);
	job->ops = ops;
	return NULL;
}

static uint64_t in_workers(void *(*fn)(void *))
{
	pthread_t threads[MAX_WORKERS];
	struct job jobs[MAX_WORKERS] = {{0}};
	uint64_t ops = 0;
	for (unsigned i = 0; i < workers; i++) {
		jobs[i].id = i;
		if (pthread_create(&threads[i], NULL, fn, &jobs[i]))
			exit(1);
	}
	for (unsigned i = 0; i < workers; i++) {
		pthread_join(threads[i], NULL);
		ops += jobs[i].ops;
	}
	return ops;
}

/* The memory cgroup's directory (cgroup v2 with memory.max, else v1's memory controller), or NULL. */
static int memcg(char *dir, size_t size, int *v2)
{
	char line[1024], path[1200];
	FILE *f = fopen("/proc/self/cgroup", "r");
	int found = 0;
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof line, f)) {
		char *ctrl = strchr(line, ':'), *rel = ctrl ? strchr(ctrl + 1, ':') : NULL;
		if (!rel)
			continue;
		rel[strcspn(rel, "\n")] = 0;
		if (ctrl[1] == ':') {
			snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", rel + 1);
			if (!access(path, R_OK)) {
				snprintf(dir, size, "/sys/fs/cgroup%s", rel + 1);
				*v2 = found = 1;
			}
		} else if (strstr(ctrl, "memory")) {
			snprintf(dir, size, "/sys/fs/cgroup/memory%s", rel + 1);
			*v2 = 0;
			found = !access(dir, R_OK);
		}
	}
	fclose(f);
	return found;
}

/* Where the cgroup's peak usage is kept, reset to now where the kernel allows it (v1: max_usage_in_bytes). */
static long long peak(const char *dir, int v2, int reset)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.peak" : "memory.max_usage_in_bytes");
	if (reset && !v2) {
		FILE *f = fopen(path, "w");
		if (f) {
			fputs("0\n", f);
			fclose(f);
		}
	}
	return number(path);
}

static long long limit_events(const char *dir, int v2)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/memory.events", dir);
	return v2 ? field(path, "max", ' ') : -1;
}

static void ballast(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	for (size_t i = 0; i < bytes; i += PAGE)
		memset(p + i, 0x33, PAGE); /* dense: every page used, nothing for the shrinker */
}

static char buf[1 << 20];

/* The file, written before the pressure and dropped from the page cache: the pressure reads clean pages
 * (dirty ones under a tight limit are what a cgroup v1 cannot write back in time). */
static int written(const char *file, long long bytes)
{
	int fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (fd < 0) {
		fprintf(stderr, "cannot create %s: %s\n", file, strerror(errno));
		exit(3);
	}
	unlink(file);
	memset(buf, 0x77, sizeof buf);
	for (long long done = 0; done < bytes; done += sizeof buf) {
		if (write(fd, buf, sizeof buf) < 0) {
			fprintf(stderr, "cannot write %s: %s\n", file, strerror(errno));
			exit(3);
		}
		if (done % (8 << 20) == 0) {
			fdatasync(fd);
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		}
	}
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return fd;
}

/* The memory cgroup's limit in bytes (its directory in dir); exits 3 when there is none to press against. */
static long long cgroup_limit(char *dir, size_t size, int *v2)
{
	char path[1200];
	if (!memcg(dir, size, v2)) {
		fprintf(stderr, "no memory cgroup of this process found in /proc/self/cgroup: no pressure\n");
		exit(3);
	}
	snprintf(path, sizeof path, "%s/%s", dir, *v2 ? "memory.max" : "memory.limit_in_bytes");
	long long limit = number(path);
	if (limit <= 0 || limit > (1LL << 40)) {
		fprintf(stderr, "%s: no memory limit to press against (limit %lld)\n", dir, limit);
		exit(3);
	}
	return limit;
}

static void pressure(const char *file, long long headroom)
{
	char dir[1100], path[1200];
	int v2 = 0;
	long long limit = cgroup_limit(dir, sizeof dir, &v2);
	int fd = written(file, 2 * limit);
	snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	long long usage = number(path);
	if (usage >= 0 && limit - usage > headroom)
		ballast((size_t)(limit - usage - headroom) & ~(PAGE - 1));
	long long events = limit_events(dir, v2), splits = field("/proc/vmstat", "thp_underused_split_page", ' ');
	peak(dir, v2, 1);
	for (int pass = 0; pass < 2; pass++) {
		lseek(fd, 0, SEEK_SET);
		while (read(fd, buf, sizeof buf) > 0)
			;
	}
	close(fd);
	long long top = peak(dir, v2, 0);
	events = v2 ? limit_events(dir, v2) - events : -1;
	printf("limit_gap_kib=%lld\nunderused_splits=%lld\n", top >= 0 ? (limit - top) >> 10 : -1,
	       field("/proc/vmstat", "thp_underused_split_page", ' ') - splits);
	if (!(v2 ? events > 0 : top >= limit - (1LL << 20))) {
		fprintf(stderr, "%s: the limit (%lld) was not reached while %lld bytes of file were read (peak %lld, "
			"limit events %lld): no pressure\n", dir, limit, 2 * limit, top, events);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	if (argc < 6 || (strcmp(argv[5], "none") && (strcmp(argv[5], "cache") || argc < 8))) {
		fprintf(stderr, "usage: underused REGION_MIB TOUCH WORKERS ACCESS_S none|cache [FILE HEADROOM_MIB]\n");
		return 2;
	}
	blocks = strtoull(argv[1], NULL, 10) * (1ULL << 20) / HUGE;
	touch = (unsigned)atoi(argv[2]);
	workers = (unsigned)atoi(argv[3]);
	access_s = atof(argv[4]);
	if (!blocks || !touch || touch > PER_HUGE || !workers || workers > MAX_WORKERS || access_s < 0) {
		fprintf(stderr, "underused: REGION_MIB >= 2, 1 <= TOUCH <= 512, 1 <= WORKERS <= 64, ACCESS_S >= 0\n");
		return 2;
	}
	FILE *adj = fopen("/proc/self/oom_score_adj", "w");
	if (adj) {
		fputs("1000\n", adj);
		fclose(adj);
	}
	char *raw = mmap(NULL, blocks * HUGE + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	heap = (char *)(((uintptr_t)raw + HUGE - 1) & ~(HUGE - 1)); /* no madvise: the THP mode decides */
	long long faults = field("/proc/vmstat", "thp_fault_alloc", ' ');
	in_workers(touch_blocks);
	faults = faults < 0 ? -1 : field("/proc/vmstat", "thp_fault_alloc", ' ') - faults;
	long long rss, huge;
	heap_smaps(&rss, &huge);
	printf("faulted_huge_kib=%lld\nhuge_faults=%lld\n", huge, faults);
	fflush(stdout);
	if (!strcmp(argv[5], "cache"))
		pressure(argv[6], atoll(argv[7]) << 20);
	heap_smaps(&rss, &huge);
	printf("pressed_huge_kib=%lld\n", huge);
	double t0 = now();
	uint64_t ops = in_workers(access_pages);
	double elapsed = now() - t0;
	heap_smaps(&rss, &huge);
	printf("sparse_rss_kib=%lld\nsparse_huge_kib=%lld\n", rss, huge);
	if (access_s > 0)
		printf("ops_per_s=%.0f\n", ops / elapsed);
	return 0;
}
