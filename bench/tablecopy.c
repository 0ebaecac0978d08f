/* tablecopy.c - the cost of serving the table from a private copy instead of a shared mapping */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "table.h"
#include "util.h"

/*
 * Usage: tablecopy [N [LOOKUPS]]
 *
 * Writes a table of N revoked ids ("tok-" + 16 hex digits, scope
 * "default") to a temporary file, then opens it the two ways revcheckd
 * has served it:
 *   copy  table_open(): read into private anonymous memory, validated
 *         (what revcheckd does now: no edit of the file reaches it);
 *   map   mmap(MAP_PRIVATE, read-only) + table_parse() over the
 *         mapping, then MADV_DONTNEED (the path before: pages nobody
 *         wrote to follow the file, so an edit in place reaches the
 *         table).
 * and prints, best of OPEN_REPS opens with the file in the page cache:
 *
 *   tablecopy n=N bytes=B copy_open_s=S map_open_s=S copy_rss=B map_rss=B
 *       copy_lookup_ns=L map_lookup_ns=L
 *
 * *_rss is the growth of VmRSS the open leaves behind (the copy keeps the
 * whole table resident; the mapping lets the kernel drop it), *_lookup_ns
 * the mean over LOOKUPS lookups of present ids at random.
 */

#define OPEN_REPS	3

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long
rss_bytes(void)
{
	char line[256];
	long long kb = -1;
	FILE *fp = fopen("/proc/self/status", "r");

	if (fp == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
			break;
	fclose(fp);
	return kb * 1024;
}

static void
mkid(char *buf, uint64_t i)
{
	/* A bijective mix, so the ids are unique and not in key order. */
	i = (i ^ (i >> 31)) * UINT64_C(0x7fb5d329728ea185);
	snprintf(buf, 21, "tok-%016" PRIx64, i);
}

struct opened {
	struct table	*t;
	void		*map;
	size_t		 len;
};

static int
open_copy(const char *path, struct opened *o)
{
	char err[256];

	memset(o, 0, sizeof(*o));
	if ((o->t = table_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "tablecopy: %s\n", err);
		return -1;
	}
	return 0;
}

static int
open_map(const char *path, struct opened *o)
{
	struct stat st;
	char err[256];
	int fd;

	memset(o, 0, sizeof(*o));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		perror(path);
		if (fd != -1)
			close(fd);
		return -1;
	}
	o->len = (size_t)st.st_size;
	o->map = mmap(NULL, o->len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (o->map == MAP_FAILED) {
		o->map = NULL;
		perror("mmap");
		return -1;
	}
	if ((o->t = table_parse(o->map, o->len, false, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "tablecopy: %s\n", err);
		munmap(o->map, o->len);
		return -1;
	}
	(void)madvise(o->map, o->len, MADV_RANDOM);
	(void)madvise(o->map, o->len, MADV_DONTNEED);
	return 0;
}

static void
close_opened(struct opened *o)
{
	table_close(o->t);
	if (o->map != NULL)
		munmap(o->map, o->len);
}

/* Best open time, the RSS the last open left, the mean lookup time. */
static int
measure(const char *path, uint64_t n, uint64_t lookups,
    int (*opener)(const char *, struct opened *), double *open_s,
    long long *rss, double *lookup_ns)
{
	struct opened o;
	struct revkey k;
	char id[21];
	double t0, best = 1e30;
	long long before;
	uint64_t i, x = 88172645463325252ULL, hits = 0;
	int r;

	for (r = 0; r < OPEN_REPS; r++) {
		before = rss_bytes();
		t0 = now_s();
		if (opener(path, &o) == -1)
			return -1;
		if (now_s() - t0 < best)
			best = now_s() - t0;
		*rss = rss_bytes() - before;
		if (r + 1 < OPEN_REPS)
			close_opened(&o);
	}
	*open_s = best;
	t0 = now_s();
	for (i = 0; i < lookups; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		mkid(id, x % n);
		if (revkey_set(&k, "default", id, 20) == 0 &&
		    table_lookup(o.t, &k, NULL) == 1)
			hits++;
	}
	*lookup_ns = (now_s() - t0) * 1e9 / (double)lookups;
	close_opened(&o);
	if (hits != lookups) {
		fprintf(stderr, "tablecopy: %" PRIu64 " of %" PRIu64
		    " present ids found\n", hits, lookups);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct table_builder b;
	struct revkey k;
	char path[] = "/tmp/revcheck-tablecopy-XXXXXX", err[256], id[21];
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	uint64_t lookups = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	double copy_s, map_s, copy_ns, map_ns;
	long long copy_rss, map_rss;
	uint64_t i, size = 0;
	int fd, rc = 1;

	if (n == 0 || lookups == 0) {
		fprintf(stderr, "usage: tablecopy [N [LOOKUPS]]\n");
		return 2;
	}
	table_builder_init(&b);
	for (i = 0; i < n; i++) {
		mkid(id, i);
		if (revkey_set(&k, "default", id, 20) != 0 ||
		    table_builder_add(&b, &k, 1700000000, NULL) != 0) {
			fprintf(stderr, "tablecopy: cannot add record %" PRIu64
			    "\n", i);
			goto out;
		}
	}
	table_builder_sort_unique(&b);
	if ((fd = mkstemp(path)) == -1 ||
	    table_builder_write(&b, fd, NULL, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "tablecopy: %s\n", fd == -1 ? "mkstemp" : err);
		goto out;
	}
	size = (uint64_t)lseek(fd, 0, SEEK_END);
	close(fd);
	table_builder_free(&b);
	if (measure(path, n, lookups, open_copy, &copy_s, &copy_rss,
	    &copy_ns) == -1 ||
	    measure(path, n, lookups, open_map, &map_s, &map_rss,
	    &map_ns) == -1)
		goto out_unlink;
	printf("tablecopy n=%" PRIu64 " bytes=%" PRIu64 " copy_open_s=%.3f "
	    "map_open_s=%.3f copy_rss=%lld map_rss=%lld copy_lookup_ns=%.0f "
	    "map_lookup_ns=%.0f\n", n, size, copy_s, map_s, copy_rss, map_rss,
	    copy_ns, map_ns);
	rc = 0;
out_unlink:
	unlink(path);
out:
	table_builder_free(&b);
	return rc;
}
