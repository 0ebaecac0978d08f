/* procstat.h - the process's own resource figures (Prometheus' standard process_* metrics) and build identity */
#ifndef REVCHECK_PROCSTAT_H
#define REVCHECK_PROCSTAT_H

#include <stddef.h>

/*
 * Writes the standard process metrics of the calling process in the
 * Prometheus text format into out[cap], NUL-terminated:
 * process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds and
 * process_start_time_seconds, read from /proc/self. A figure that cannot
 * be read is left out (with its HELP and TYPE lines), never reported as
 * 0. Returns the length written, or 0 when out is too small (out is then
 * an empty string). 2048 bytes always suffice. Can't fail otherwise.
 */
size_t procstat_format(char *out, size_t cap);

/*
 * The source revision the binary was built from (a git commit, short
 * form, with "-dirty" when the tree had changes), or "unknown" when built
 * outside a git checkout. Can't fail.
 */
const char *procstat_revision(void);

#endif
