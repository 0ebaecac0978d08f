/* procstat.c - process_* metrics from /proc/self, and the build's revision */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "procstat.h"
#include "revision.h"

const char *
procstat_revision(void)
{
	return REVCHECK_REVISION;
}

/* Fields 14, 15 (utime, stime) and 22 (starttime) of /proc/self/stat. */
static int
read_stat(unsigned long long *ticks, unsigned long long *start)
{
	char buf[1024], *p;
	unsigned long long ut, st;
	size_t n;
	FILE *f;
	int rc;

	if ((f = fopen("/proc/self/stat", "re")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces: skip to its ')'. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	/* Fields 3..13 skipped, 14 15 read, 16..21 skipped, 22 read. */
	rc = sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	    "%llu %llu %*d %*d %*d %*d %*d %*d %llu", &ut, &st, start);
	if (rc != 3)
		return -1;
	*ticks = ut + st;
	return 0;
}

/*
 * The boot time, Unix seconds: the real-time clock less the time since
 * boot (/proc/stat's btime is not readable under systemd's
 * ProcSubset=pid).
 */
static int
read_btime(double *btime)
{
	struct timespec rt, bt;

	if (clock_gettime(CLOCK_REALTIME, &rt) != 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &bt) != 0)
		return -1;
	*btime = (double)(rt.tv_sec - bt.tv_sec) +
	    (double)(rt.tv_nsec - bt.tv_nsec) / 1e9;
	return 0;
}

/* Pages of virtual size and resident set (/proc/self/statm). */
static int
read_statm(unsigned long long *vsz, unsigned long long *rss)
{
	FILE *f;
	int rc;

	if ((f = fopen("/proc/self/statm", "re")) == NULL)
		return -1;
	rc = fscanf(f, "%llu %llu", vsz, rss);
	fclose(f);
	return rc == 2 ? 0 : -1;
}

/* Open descriptors: the entries of /proc/self/fd but its own. */
static long
count_fds(void)
{
	struct dirent *de;
	long n = 0;
	DIR *d;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the descriptor opendir holds */
}

/* Appends one metric (HELP, TYPE, sample) at out[*len]; false when full. */
static bool
add(char *out, size_t cap, size_t *len, const char *name, const char *type,
    const char *help, double v)
{
	int w;

	w = snprintf(out + *len, cap - *len, "# HELP %s %s\n# TYPE %s %s\n"
	    "%s %.17g\n", name, help, name, type, name, v);
	if (w < 0 || (size_t)w >= cap - *len)
		return false;
	*len += (size_t)w;
	return true;
}

size_t
procstat_format(char *out, size_t cap)
{
	unsigned long long ticks, start, vsz, rss;
	double btime;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	struct rlimit rl;
	size_t len = 0;
	bool ok = true;

	if (cap == 0)
		return 0;
	out[0] = '\0';
	if (hz <= 0 || page <= 0)
		return 0;
	if (read_stat(&ticks, &start) == 0) {
		ok = ok && add(out, cap, &len, "process_cpu_seconds_total",
		    "counter", "Total user and system CPU time spent in "
		    "seconds.", (double)ticks / (double)hz);
		if (read_btime(&btime) == 0)
			ok = ok && add(out, cap, &len,
			    "process_start_time_seconds", "gauge", "Start "
			    "time of the process since unix epoch in seconds.",
			    btime + (double)start / (double)hz);
	}
	if (read_statm(&vsz, &rss) == 0) {
		ok = ok && add(out, cap, &len, "process_virtual_memory_bytes",
		    "gauge", "Virtual memory size in bytes.",
		    (double)vsz * (double)page);
		ok = ok && add(out, cap, &len, "process_resident_memory_bytes",
		    "gauge", "Resident memory size in bytes.",
		    (double)rss * (double)page);
	}
	if ((fds = count_fds()) >= 0)
		ok = ok && add(out, cap, &len, "process_open_fds", "gauge",
		    "Number of open file descriptors.", (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		ok = ok && add(out, cap, &len, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.",
		    (double)rl.rlim_cur);
	if (!ok) {
		out[0] = '\0';
		return 0;
	}
	return len;
}
