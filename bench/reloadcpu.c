/* reloadcpu.c - the CPU time one table reload costs the thread that loads it */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "table.h"
#include "util.h"

/*
 * Usage: reloadcpu [-c] [-k] [-r RELOADS] TABLE...
 *
 * Loads the tables in turn as revcheckd's loader does on a reload: the
 * new table is opened (read into private memory, validated, hashed)
 * while the previous one is still held, then the previous one is closed.
 * Each reload's CPU time is the loading thread's (RUSAGE_THREAD: user
 * and system), a figure that other work on the machine moves less than
 * wall time.
 *   -c  cold: each file is dropped from the page cache before it is
 *       opened (POSIX_FADV_DONTNEED, outside the timing), as a version
 *       filterbuild just wrote with O_DIRECT is
 *   -k  keep a spare buffer between loads (util_copy_keep), as
 *       revcheckd does; ignored by a library without it
 *   -r  reloads (default 20), after one untimed load
 * Prints: reloadcpu reloads=R cold=0|1 keep=0|1 cpu_ms_median=M
 *   cpu_ms_best=B user_ms_median=U sys_ms_median=S wall_ms_median=W
 */

/* Absent from a library built before util_copy_keep. */
extern void util_copy_keep(bool) __attribute__((weak));

static double
tv_ms(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e3 + (double)tv->tv_usec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
drop_cache(const char *path)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
	struct rusage r0, r1;
	struct table *prev = NULL, *t;
	double *cpu, *usr, *sys, *wall, w0, best;
	char err[512], *end;
	long v;
	bool cold = false, keep = false;
	int c, i, reloads = 20, nfiles;

	while ((c = getopt(argc, argv, "ckr:")) != -1) {
		switch (c) {
		case 'c':
			cold = true;
			break;
		case 'k':
			keep = true;
			break;
		case 'r':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    v < 1 || v > 100000)
				goto usage;
			reloads = (int)v;
			break;
		default:
			goto usage;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || reloads < 1)
		goto usage;
	nfiles = argc;
	if (keep && util_copy_keep != NULL)
		util_copy_keep(true);
	else
		keep = false;
	cpu = calloc((size_t)reloads, sizeof(double));
	usr = calloc((size_t)reloads, sizeof(double));
	sys = calloc((size_t)reloads, sizeof(double));
	wall = calloc((size_t)reloads, sizeof(double));
	if (cpu == NULL || usr == NULL || sys == NULL || wall == NULL)
		return 1;
	for (i = -1; i < reloads; i++) {
		const char *path = argv[(i + 1) % nfiles];

		if (cold)
			drop_cache(path);
		getrusage(RUSAGE_THREAD, &r0);
		w0 = util_monotime();
		if ((t = table_open(path, err, sizeof(err))) == NULL) {
			fprintf(stderr, "reloadcpu: %s\n", err);
			return 1;
		}
		table_close(prev);
		prev = t;
		getrusage(RUSAGE_THREAD, &r1);
		if (i < 0)
			continue;
		usr[i] = tv_ms(&r1.ru_utime) - tv_ms(&r0.ru_utime);
		sys[i] = tv_ms(&r1.ru_stime) - tv_ms(&r0.ru_stime);
		cpu[i] = usr[i] + sys[i];
		wall[i] = (util_monotime() - w0) * 1e3;
	}
	table_close(prev);
	if (util_copy_keep != NULL)
		util_copy_keep(false);
	best = cpu[0];
	for (i = 1; i < reloads; i++)
		if (cpu[i] < best)
			best = cpu[i];
	printf("reloadcpu reloads=%d cold=%d keep=%d cpu_ms_median=%.1f "
	    "cpu_ms_best=%.1f", reloads, cold, keep, median(cpu, reloads),
	    best);
	printf(" user_ms_median=%.1f sys_ms_median=%.1f wall_ms_median=%.1f\n",
	    median(usr, reloads), median(sys, reloads),
	    median(wall, reloads));
	return 0;
usage:
	fprintf(stderr, "usage: reloadcpu [-c] [-k] [-r RELOADS] TABLE...\n");
	return 2;
}
