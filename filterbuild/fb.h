/* fb.h - filterbuild: the subcommands and the helpers they share */
#ifndef REVCHECK_FB_H
#define REVCHECK_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes of every subcommand. */
#define FB_EXIT_OK	0
#define FB_EXIT_FAIL	1	/* an error, or verification failed */
#define FB_EXIT_USAGE	2	/* bad command line */

/*
 * A subcommand takes its own argv (argv[0] is the subcommand name) and
 * returns an exit code. Each lives in its own file; main.c dispatches.
 */
int fb_keygen(int argc, char **argv);
int fb_build(int argc, char **argv);
int fb_follow(int argc, char **argv);

/* What fb_build_source() published. */
struct fb_built {
	uint64_t	 version;
	uint64_t	 cursor;	/* the --source snapshot's change horizon */
	size_t		 keys;
};

/*
 * fb_build() for filterbuild follow's re-bases: argv as for build, with
 * --source; on FB_EXIT_OK res says what was published. Same exit codes.
 */
int fb_build_source(int argc, char **argv, struct fb_built *res);
int fb_inspect(int argc, char **argv);
int fb_verify(int argc, char **argv);
/*
 * Declared weak so that filterbuild/audit.c can add the subcommand without
 * touching the dispatch table: when it is absent, "audit" is not offered.
 */
int fb_audit(int argc, char **argv) __attribute__((weak));

/* Prints "filterbuild: <message>" on stderr. */
void fb_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Prints "filterbuild <cmd>: <message>" and a hint to use --help on
 * stderr and returns FB_EXIT_USAGE.
 */
int fb_usage_err(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Resets getopt so that a subcommand can parse its own argv. Call before
 * the first getopt_long() of a subcommand.
 */
void fb_getopt_reset(void);

#endif
