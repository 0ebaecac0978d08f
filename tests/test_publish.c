/* test_publish.c - versioned pairs, atomic switch, refusals, fsync failures, pruning */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pub_helpers.h"
#include "publish.h"
#include "util.h"

static char g_dir[64];

static void
setup(void)
{
	cr_assert(snprintf(g_dir, sizeof(g_dir), "/tmp/test_publish_XXXXXX") > 0);
	cr_assert_not_null(mkdtemp(g_dir));
	publish_set_fsync_hook(NULL);
	publish_set_gate(NULL, NULL);
}

static void
teardown(void)
{
	char cmd[128];

	publish_set_fsync_hook(NULL);
	publish_set_gate(NULL, NULL);
	cr_assert(snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir) > 0);
	cr_assert_eq(system(cmd), 0);
}

static int
pub(uint64_t v, const char *f, const char *t, unsigned keep, char *err,
    size_t errlen)
{
	return publish_pair(g_dir, v, (const unsigned char *)f, strlen(f),
	    (const unsigned char *)t, strlen(t), keep, err, errlen);
}

static void
expect_current(uint64_t want, const char *fcontent)
{
	char vdir[256], path[300], err[256];
	uint64_t v;
	unsigned char *buf;
	size_t len;

	cr_assert_eq(publish_current(g_dir, vdir, sizeof(vdir), &v, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(v, want);
	cr_assert(snprintf(path, sizeof(path), "%s/%s", vdir,
	    PUBLISH_FILTER_NAME) > 0);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_str_eq((char *)buf, fcontent);
	free(buf);
}

static int
count_versions(void)
{
	DIR *d = opendir(g_dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] == 'v')
			n++;
	closedir(d);
	return n;
}

TestSuite(publish, .init = setup, .fini = teardown);

Test(publish, first_and_next_versions)
{
	char err[256], vdir[256];
	uint64_t v;

	cr_assert_eq(publish_current(g_dir, vdir, sizeof(vdir), &v, err,
	    sizeof(err)), 1, "no current pair yet");
	cr_assert_eq(pub(1, "f1", "t1", 3, err, sizeof(err)), 0, "%s", err);
	expect_current(1, "f1");
	cr_assert_eq(pub(7, "f7", "t7", 3, err, sizeof(err)), 0, "%s", err);
	expect_current(7, "f7");
	cr_assert(strstr(vdir, "") != NULL);
	cr_assert_eq(publish_current(g_dir, vdir, sizeof(vdir), &v, err,
	    sizeof(err)), 0);
	cr_assert(strstr(vdir, "/v00000000000000000007") != NULL, "%s", vdir);
}

Test(publish, refused_version_leaves_dir_untouched)
{
	char err[256], before[8192], after[8192];

	cr_assert_eq(pub(5, "f5", "t5", 3, err, sizeof(err)), 0, "%s", err);
	dir_state(g_dir, before, sizeof(before));
	cr_assert_eq(pub(5, "x", "y", 3, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not above") != NULL, "%s", err);
	cr_assert_eq(pub(4, "x", "y", 3, err, sizeof(err)), -1);
	cr_assert_eq(pub(0, "x", "y", 3, err, sizeof(err)), -1);
	dir_state(g_dir, after, sizeof(after));
	cr_assert_str_eq(before, after);
	expect_current(5, "f5");
}

Test(publish, keep_prunes_old_versions)
{
	char err[256];
	uint64_t v;

	for (v = 1; v <= 6; v++)
		cr_assert_eq(pub(v, "f", "t", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(count_versions(), 3);
	cr_assert_eq(pub(7, "f7", "t", 1, err, sizeof(err)), 0);
	cr_assert_eq(count_versions(), 1);
	expect_current(7, "f7");
}

Test(publish, fsync_failure_aborts_and_restores)
{
	char err[256], before[8192], after[8192];
	int i;

	cr_assert_eq(pub(1, "f1", "t1", 3, err, sizeof(err)), 0);
	dir_state(g_dir, before, sizeof(before));
	/* A publish makes 5 fsync calls: fail each in turn. */
	for (i = 1; i <= 5; i++) {
		g_fail_at = i;
		g_calls = 0;
		publish_set_fsync_hook(failing_fsync);
		cr_assert_eq(pub(2, "f2", "t2", 3, err, sizeof(err)), -1,
		    "fsync %d failure ignored", i);
		cr_assert(strstr(err, "fsync") != NULL, "%s", err);
		cr_assert_eq(g_calls, i, "fsync retried after failure %d", i);
		publish_set_fsync_hook(NULL);
		dir_state(g_dir, after, sizeof(after));
		cr_assert_str_eq(before, after, "fsync %d failure left traces", i);
	}
	g_fail_at = 6;
	g_calls = 0;
	publish_set_fsync_hook(failing_fsync);
	cr_assert_eq(pub(2, "f2", "t2", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g_calls, 5);
	expect_current(2, "f2");
}

Test(publish, stale_leftovers_cleaned)
{
	char err[256], path[256];
	struct stat st;

	cr_assert_eq(pub(1, "f1", "t1", 3, err, sizeof(err)), 0);
	/* What a killed run leaves: a temp dir, a temp link, an orphan. */
	cr_assert(snprintf(path, sizeof(path), "%s/.tmp-abcdef", g_dir) > 0);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert(snprintf(path, sizeof(path), "%s/.tmp-abcdef/filter.rcf",
	    g_dir) > 0);
	cr_assert_eq(system("true"), 0);
	{
		FILE *fp = fopen(path, "w");

		cr_assert_not_null(fp);
		fputs("partial", fp);
		fclose(fp);
	}
	cr_assert(snprintf(path, sizeof(path), "%s/v00000000000000000002",
	    g_dir) > 0);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert(snprintf(path, sizeof(path), "%s/.current.tmp", g_dir) > 0);
	cr_assert_eq(symlink("v00000000000000000002", path), 0);

	cr_assert_eq(pub(2, "f2", "t2", 3, err, sizeof(err)), 0, "%s", err);
	expect_current(2, "f2");
	cr_assert(snprintf(path, sizeof(path), "%s/.tmp-abcdef", g_dir) > 0);
	cr_assert_eq(stat(path, &st), -1);
	cr_assert(snprintf(path, sizeof(path), "%s/.current.tmp", g_dir) > 0);
	cr_assert_eq(lstat(path, &st), -1);
}

/*
 * Without "current", version directories may be a published history whose
 * link was lost: publishing again keeps them (it removed them all, as if
 * they were leftovers of a killed first run).
 */
Test(publish, lost_current_link_keeps_versions)
{
	char err[256], path[256];
	struct stat st;
	int v;

	cr_assert_eq(pub(1, "f1", "t1", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(pub(2, "f2", "t2", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/current", g_dir) > 0);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(pub(3, "f3", "t3", 3, err, sizeof(err)), 0, "%s", err);
	expect_current(3, "f3");
	for (v = 1; v <= 2; v++) {
		cr_assert(snprintf(path, sizeof(path),
		    "%s/v%020d/filter.rcf", g_dir, v) > 0);
		cr_assert_eq(stat(path, &st), 0, "version %d removed", v);
	}
}

Test(publish, bad_current_link_is_an_error)
{
	char err[256], path[256], vdir[256];
	uint64_t v;

	cr_assert(snprintf(path, sizeof(path), "%s/current", g_dir) > 0);
	cr_assert_eq(symlink("../../etc", path), 0);
	cr_assert_eq(publish_current(g_dir, vdir, sizeof(vdir), &v, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "not a version directory") != NULL, "%s", err);
	cr_assert_eq(pub(1, "f", "t", 3, err, sizeof(err)), -1);
}

Test(publish, creates_missing_dir)
{
	char err[256], sub[128];

	cr_assert(snprintf(sub, sizeof(sub), "%s/out", g_dir) > 0);
	cr_assert_eq(publish_pair(sub, 1, (const unsigned char *)"f", 1,
	    (const unsigned char *)"t", 1, 3, err, sizeof(err)), 0, "%s", err);
}

/* The names in g_dir, sorted, one per line. */
static void
listing(char *out, size_t cap)
{
	char cmd[160];
	FILE *fp;
	size_t n;

	cr_assert(snprintf(cmd, sizeof(cmd), "ls -A '%s' | sort", g_dir) > 0);
	fp = popen(cmd, "r");
	cr_assert_not_null(fp);
	n = fread(out, 1, cap - 1, fp);
	out[n] = '\0';
	cr_assert_eq(pclose(fp), 0);
}

/*
 * publish_path: the exact mode whatever the umask, replace or refuse an
 * existing file, several buffers as one file, and on a failed fsync the
 * old file untouched and no temporary left.
 */
Test(publish, path_modes_excl_and_failures)
{
	char path[128], err[256], names[256], head[] = "head\n", body[] = "body";
	struct iovec iov[2];
	struct stat st;
	unsigned char *buf;
	size_t len;
	mode_t old;

	cr_assert(snprintf(path, sizeof(path), "%s/key.pem", g_dir) > 0);
	old = umask(077);
	cr_assert_eq(publish_path(path, "one", 3, 0644, PUBLISH_EXCL, err,
	    sizeof(err)), 0, "%s", err);
	umask(old);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "mode %o: the umask applied",
	    (unsigned)(st.st_mode & 07777));

	cr_assert_eq(publish_path(path, "two", 3, 0600, PUBLISH_EXCL, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "key.pem: already exists") != NULL, "%s", err);
	cr_assert_eq(util_read_file(path, 64, &buf, &len, err, sizeof(err)), 0);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(buf, "one", 3), 0, "EXCL left the file alone");
	free(buf);

	iov[0].iov_base = head;
	iov[0].iov_len = 5;
	iov[1].iov_base = body;
	iov[1].iov_len = 4;
	cr_assert_eq(publish_pathv(path, iov, 2, 0600, 0, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(util_read_file(path, 64, &buf, &len, err, sizeof(err)), 0);
	cr_assert_eq(len, 9);
	cr_assert_eq(memcmp(buf, "head\nbody", 9), 0);
	free(buf);

	g_fail_at = 1;
	g_calls = 0;
	publish_set_fsync_hook(failing_fsync);
	cr_assert_eq(publish_path(path, "three", 5, 0600, 0, err, sizeof(err)),
	    -1);
	publish_set_fsync_hook(NULL);
	cr_assert(strstr(err, "key.pem: fsync") != NULL, "%s", err);
	cr_assert_eq(util_read_file(path, 64, &buf, &len, err, sizeof(err)), 0);
	cr_assert_eq(memcmp(buf, "head\nbody", 9), 0, "old bytes kept");
	free(buf);
	listing(names, sizeof(names));
	cr_assert_str_eq(names, "key.pem\n", "no temporary left: %s", names);

	cr_assert_eq(publish_path(g_dir, "x", 1, 0600, 0, err, sizeof(err)), -1,
	    "a directory is not replaced");
	cr_assert(snprintf(path, sizeof(path), "%s/", g_dir) > 0);
	cr_assert_eq(publish_path(path, "x", 1, 0600, 0, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not a file name") != NULL, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/nodir/f", g_dir) > 0);
	cr_assert_eq(publish_path(path, "x", 1, 0600, 0, err, sizeof(err)), -1);
	cr_assert(strstr(err, "nodir/f: create a temporary file") != NULL,
	    "%s", err);
}

/* A gate that lets g_gate_pass steps through, then refuses; counts calls. */
static int g_gate_pass, g_gate_calls;
static char g_gate_last[256];

static int
test_gate(void *arg, const char *tmp, const char *path, char *err,
    size_t errlen)
{
	(void)arg;
	g_gate_calls++;
	snprintf(g_gate_last, sizeof(g_gate_last), "%s", path);
	if (tmp != NULL)
		cr_assert_eq(access(tmp, F_OK), 0, "the gate sees the temporary");
	if (g_gate_calls <= g_gate_pass)
		return 0;
	snprintf(err, errlen, "%s: refused by the gate", path);
	return -1;
}

Test(publish, gate_refuses_before_anything_is_visible)
{
	char path[128], err[256], names[256], before[8192], after[8192];
	unsigned char *buf;
	size_t len;

	cr_assert(snprintf(path, sizeof(path), "%s/head.rcd", g_dir) > 0);
	publish_set_gate(test_gate, NULL);
	/* A file: the gate is asked once, right before the rename. */
	g_gate_pass = 1;
	g_gate_calls = 0;
	cr_assert_eq(publish_path(path, "one", 3, 0644, 0, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(g_gate_calls, 1);
	cr_assert_str_eq(g_gate_last, path);
	cr_assert_eq(publish_path(path, "two", 3, 0644, 0, err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "refused by the gate") != NULL, "%s", err);
	cr_assert_neq(errno, EEXIST, "a refusal is not a lost race");
	cr_assert_eq(util_read_file(path, 64, &buf, &len, err, sizeof(err)), 0);
	cr_assert_eq(memcmp(buf, "one", 3), 0, "the refused file left alone");
	free(buf);
	listing(names, sizeof(names));
	cr_assert_str_eq(names, "head.rcd\n", "no temporary left: %s", names);

	/* A pair: asked before the version's rename and before the switch. */
	cr_assert_eq(unlink(path), 0);
	g_gate_pass = 2;
	g_gate_calls = 0;
	cr_assert_eq(pub(1, "f1", "t1", 3, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g_gate_calls, 2);
	cr_assert_str_eq(g_gate_last, PUBLISH_CURRENT);
	dir_state(g_dir, before, sizeof(before));
	for (g_gate_pass = 0; g_gate_pass < 2; g_gate_pass++) {
		g_gate_calls = 0;
		cr_assert_eq(pub(2, "f2", "t2", 3, err, sizeof(err)), -1,
		    "refused at step %d", g_gate_pass + 1);
		cr_assert(strstr(err, "refused by the gate") != NULL, "%s",
		    err);
		dir_state(g_dir, after, sizeof(after));
		cr_assert_str_eq(before, after, "a refusal at step %d left "
		    "traces", g_gate_pass + 1);
	}
	expect_current(1, "f1");
	publish_set_gate(NULL, NULL);
	cr_assert_eq(pub(2, "f2", "t2", 3, err, sizeof(err)), 0, "%s", err);
	expect_current(2, "f2");
}
