/* peakrss.c - runs a command and reports its wall time and peak resident memory */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Usage: peakrss OUT CMD [ARG]...
 *
 * Runs CMD, waits for it, and writes one line to the file OUT:
 *   wall_s=S maxrss_kb=K status=N
 * maxrss_kb is the child's peak RSS (getrusage through wait4), the same
 * figure as /usr/bin/time -v's "Maximum resident set size". Exits with
 * the command's status (128+signal when killed).
 */
int
main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	FILE *out;
	pid_t pid;
	int st, rc;
	double wall;

	if (argc < 3) {
		fprintf(stderr, "usage: peakrss OUT CMD [ARG]...\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((pid = fork()) == -1) {
		fprintf(stderr, "peakrss: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "peakrss: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &st, 0, &ru) == -1) {
		if (errno != EINTR) {
			fprintf(stderr, "peakrss: wait4: %s\n", strerror(errno));
			return 2;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	wall = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if ((out = fopen(argv[1], "w")) == NULL) {
		fprintf(stderr, "peakrss: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	fprintf(out, "wall_s=%.3f maxrss_kb=%ld status=%d\n", wall,
	    ru.ru_maxrss, rc);
	if (fclose(out) != 0) {
		fprintf(stderr, "peakrss: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	return rc;
}
