/* pub_helpers.h - for the publish tests: a directory's whole state as one string, an fsync that fails at its Nth call */
#ifndef REVCHECK_TESTS_PUB_HELPERS_H
#define REVCHECK_TESTS_PUB_HELPERS_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* failing_fsync fails (EIO) at call number g_fail_at, counted in g_calls. */
static int g_fail_at, g_calls;

static inline int
failing_fsync(int fd)
{
	if (++g_calls == g_fail_at) {
		errno = EIO;
		return -1;
	}
	return fsync(fd);
}

/* Every entry of dir with its type, link target and file hash. */
static inline void
dir_state(const char *dir, char *out, size_t cap)
{
	char cmd[512];
	FILE *fp;
	size_t n;

	cr_assert(snprintf(cmd, sizeof(cmd), "cd '%s' && find . -printf '%%p "
	    "%%y %%l\\n' | sort && find . -type f -exec sha256sum {} + | sort",
	    dir) > 0);
	fp = popen(cmd, "r");
	cr_assert_not_null(fp);
	n = fread(out, 1, cap - 1, fp);
	out[n] = '\0';
	cr_assert_eq(pclose(fp), 0);
}

#endif
