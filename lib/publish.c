/* publish.c - the output directory: versioned pairs, atomic switch, pruning */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "publish.h"
#include "util.h"

#define PUB_TMP_PREFIX	".tmp-"
#define PUB_LINK_TMP	".current.tmp"
#define PUB_PATH_MAX	4096

static int (*pub_fsync)(int fd) = fsync;
static publish_gate_fn pub_gate;
static void *pub_gate_arg;

void
publish_set_gate(publish_gate_fn fn, void *arg)
{
	pub_gate = fn;
	pub_gate_arg = arg;
}

/* The gate's answer for making path visible (0 when there is none). */
static int
pub_gate_pass(const char *tmp, const char *path, char *err, size_t errlen)
{
	if (pub_gate == NULL)
		return 0;
	return pub_gate(pub_gate_arg, tmp, path, err, errlen);
}

void
publish_set_fsync_hook(int (*fn)(int fd))
{
	pub_fsync = fn != NULL ? fn : fsync;
}

void
publish_version_name(char out[PUBLISH_VNAME_LEN + 1], uint64_t version)
{
	/* 20 digits hold any uint64_t, so this never truncates. */
	(void)snprintf(out, PUBLISH_VNAME_LEN + 1, "v%020" PRIu64, version);
}

/* Parses "v" + 20 digits; false for any other name. */
static bool
pub_parse_vname(const char *name, uint64_t *v)
{
	size_t i;

	if (strlen(name) != PUBLISH_VNAME_LEN || name[0] != 'v')
		return false;
	for (i = 1; i < PUBLISH_VNAME_LEN; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return util_parse_u64(name + 1, UINT64_MAX, v) == 0;
}

/* The test-only delay between steps (REVCHECK_PUBLISH_DELAY_US). */
static void
pub_delay(void)
{
	const char *s = getenv("REVCHECK_PUBLISH_DELAY_US");
	uint64_t us;
	struct timespec ts;

	if (s == NULL || util_parse_u64(s, 60000000, &us) != 0 || us == 0)
		return;
	ts.tv_sec = (time_t)(us / 1000000);
	ts.tv_nsec = (long)(us % 1000000) * 1000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int
pub_current_at(const char *dir, char *name, size_t cap, uint64_t *version,
    char *err, size_t errlen)
{
	char path[PUB_PATH_MAX], buf[64];
	ssize_t n;

	if (util_path_join(path, sizeof(path), dir, PUBLISH_CURRENT) != 0) {
		util_errf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0) {
		if (errno == ENOENT)
			return 1;
		util_errf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	if (!pub_parse_vname(buf, version)) {
		util_errf(err, errlen, "%s: points to \"%s\", not a version "
		    "directory", path, buf);
		return -1;
	}
	if ((size_t)n >= cap) {
		util_errf(err, errlen, "%s: name too long", path);
		return -1;
	}
	memcpy(name, buf, (size_t)n + 1);
	return 0;
}

int
publish_current(const char *dir, char *vdir, size_t cap, uint64_t *version,
    char *err, size_t errlen)
{
	char name[PUBLISH_VNAME_LEN + 1];
	int rc;

	assert(dir != NULL && vdir != NULL && version != NULL);
	rc = pub_current_at(dir, name, sizeof(name), version, err, errlen);
	if (rc != 0)
		return rc;
	if (util_path_join(vdir, cap, dir, name) != 0) {
		util_errf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	return 0;
}

int
publish_previous(const char *dir, uint64_t below, char *vdir, size_t cap,
    uint64_t *version, char *err, size_t errlen)
{
	char name[PUBLISH_VNAME_LEN + 1];
	struct dirent *de;
	uint64_t v, best = 0;
	DIR *d;

	assert(dir != NULL && vdir != NULL && version != NULL);
	if ((d = opendir(dir)) == NULL) {
		if (errno == ENOENT)
			return 1;	/* publish_begin() creates it */
		util_errf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL)
		if (pub_parse_vname(de->d_name, &v) && v < below && v > best)
			best = v;
	(void)closedir(d);
	if (best == 0)
		return 1;
	publish_version_name(name, best);
	if (util_path_join(vdir, cap, dir, name) != 0) {
		util_errf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	*version = best;
	return 0;
}

/*
 * Removes a directory that holds files and, depth levels down, directories
 * of files (our version directories with their delta/ and temporary
 * directories). Returns 0, or -1 with errno set.
 */
static int
pub_rmtree_depth(int dfd, const char *name, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd, saved;

	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (d == NULL) {
		saved = errno;
		(void)close(fd);
		errno = saved;
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* A version's delta/ directory (lib/delta.h) is one level down. */
		if (unlinkat(fd, de->d_name, 0) != 0 && errno != ENOENT &&
		    !(errno == EISDIR && depth > 0 &&
		    pub_rmtree_depth(fd, de->d_name, depth - 1) == 0)) {
			saved = errno;
			(void)closedir(d);
			errno = saved;
			return -1;
		}
	}
	(void)closedir(d);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

static int
pub_rmtree(int dfd, const char *name)
{
	return pub_rmtree_depth(dfd, name, 1);
}

/* A stream over dfd's entries from the first, dfd left open; NULL on error. */
static DIR *
pub_opendir(int dfd)
{
	DIR *d;
	int fd;

	if ((fd = dup(dfd)) < 0)
		return NULL;
	if ((d = fdopendir(fd)) == NULL) {
		(void)close(fd);
		return NULL;
	}
	/* The dup shares its offset with dfd: start from the beginning. */
	rewinddir(d);
	return d;
}

/*
 * Removes what a killed run may have left: temporary directories, the
 * temporary symlink, and version directories above the current version
 * (renamed into place but never made current). Without a current version
 * no version directory is removed: "current" may have been lost from a
 * published history (filterbuild build continues above its highest).
 * Best effort: what cannot be removed makes a later step fail with a
 * clear error.
 */
static void
pub_clean_stale(int dfd, bool have_cur, uint64_t cur)
{
	DIR *d;
	struct dirent *de;
	uint64_t v;

	if ((d = pub_opendir(dfd)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, PUB_TMP_PREFIX,
		    strlen(PUB_TMP_PREFIX)) == 0)
			(void)pub_rmtree(dfd, de->d_name);
		else if (strcmp(de->d_name, PUB_LINK_TMP) == 0)
			(void)unlinkat(dfd, de->d_name, 0);
		else if (have_cur && pub_parse_vname(de->d_name, &v) &&
		    v > cur)
			(void)pub_rmtree(dfd, de->d_name);
	}
	(void)closedir(d);
}

static int
pub_cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y) - (x > y);
}

/* Keeps the newest `keep` versions (never the current one) and removes the rest. */
static void
pub_prune(int dfd, unsigned keep, uint64_t cur)
{
	DIR *d;
	struct dirent *de;
	uint64_t *vs = NULL, *tmp, v;
	size_t n = 0, cap = 0, i;
	char name[PUBLISH_VNAME_LEN + 1];

	if (keep == 0)
		keep = 1;
	if ((d = pub_opendir(dfd)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!pub_parse_vname(de->d_name, &v))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			tmp = realloc(vs, cap * sizeof(*vs));
			if (tmp == NULL)
				goto out;
			vs = tmp;
		}
		vs[n++] = v;
	}
	qsort(vs, n, sizeof(*vs), pub_cmp_u64_desc);
	for (i = keep; i < n; i++) {
		if (vs[i] == cur)
			continue;
		publish_version_name(name, vs[i]);
		(void)pub_rmtree(dfd, name);
	}
out:
	free(vs);
	(void)closedir(d);
}

/* Writes a buffer into a new file in dfd, fsyncs and closes it. */
static int
pub_write_file(int dfd, const char *name, const unsigned char *buf,
    size_t len, publish_write_fn fn, void *arg, char *err, size_t errlen)
{
	int fd;

	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		util_errf(err, errlen, "%s: %s", name, strerror(errno));
		return -1;
	}
	if (fn != NULL) {
		if (fn(arg, fd, err, errlen) != 0) {
			(void)close(fd);
			return -1;
		}
	} else if (util_write_all(fd, buf, len) != 0) {
		util_errf(err, errlen, "%s: write: %s", name, strerror(errno));
		(void)close(fd);
		return -1;
	}
	pub_delay();
	if (pub_fsync(fd) != 0) {
		util_errf(err, errlen, "%s: fsync: %s", name, strerror(errno));
		(void)close(fd);
		return -1;
	}
	if (close(fd) != 0) {
		util_errf(err, errlen, "%s: close: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

static int
pub_fsync_dir(int dfd, const char *what, char *err, size_t errlen)
{
	if (pub_fsync(dfd) != 0) {
		util_errf(err, errlen, "%s: fsync: %s", what, strerror(errno));
		return -1;
	}
	return 0;
}

/* Points "current" at name through a renamed temporary symlink. */
static int
pub_switch(int dfd, const char *dir, const char *name, char *err,
    size_t errlen)
{
	(void)unlinkat(dfd, PUB_LINK_TMP, 0);
	if (symlinkat(name, dfd, PUB_LINK_TMP) != 0) {
		util_errf(err, errlen, "%s/%s: symlink: %s", dir, PUB_LINK_TMP,
		    strerror(errno));
		return -1;
	}
	pub_delay();
	if (renameat(dfd, PUB_LINK_TMP, dfd, PUBLISH_CURRENT) != 0) {
		util_errf(err, errlen, "%s/%s: rename: %s", dir, PUBLISH_CURRENT,
		    strerror(errno));
		(void)unlinkat(dfd, PUB_LINK_TMP, 0);
		return -1;
	}
	return 0;
}

static int
pub_open_dir(const char *dir, char *err, size_t errlen)
{
	int dfd;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			util_errf(err, errlen, "%s: mkdir: %s", dir,
			    strerror(errno));
			return -1;
		}
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0) {
		util_errf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (flock(dfd, LOCK_EX | LOCK_NB) != 0) {
		util_errf(err, errlen, "%s: %s", dir, errno == EWOULDBLOCK ?
		    "another publish to this directory is in progress" :
		    strerror(errno));
		(void)close(dfd);
		return -1;
	}
	return dfd;
}

int
publish_txn_begin(struct publish_txn *t, const char *dir, uint64_t version,
    char *err, size_t errlen)
{
	const char *base;
	uint64_t cur = 0;
	int rc;

	assert(t != NULL && dir != NULL);
	memset(t, 0, sizeof(*t));
	t->dfd = t->tfd = -1;
	if (version == 0) {
		util_errf(err, errlen, "%s: version must be at least 1", dir);
		return -1;
	}
	if (strlen(dir) >= sizeof(t->dir)) {
		util_errf(err, errlen, "%s: path too long", dir);
		return -1;
	}
	memcpy(t->dir, dir, strlen(dir) + 1);
	t->version = version;
	t->dfd = pub_open_dir(dir, err, errlen);
	if (t->dfd < 0)
		return -1;
	rc = pub_current_at(dir, t->cur_name, sizeof(t->cur_name), &cur, err,
	    errlen);
	if (rc < 0)
		goto fail;
	t->have_cur = rc == 0;
	if (t->have_cur && version <= cur) {
		util_errf(err, errlen, "%s: version %" PRIu64 " is not above the "
		    "current version %" PRIu64, dir, version, cur);
		goto fail;
	}
	pub_clean_stale(t->dfd, t->have_cur, cur);
	publish_version_name(t->vname, version);

	/* The files go into a fresh temporary directory inside DIR. */
	if (util_path_join(t->tmpl, sizeof(t->tmpl), dir,
	    PUB_TMP_PREFIX "XXXXXX") != 0) {
		util_errf(err, errlen, "%s: path too long", dir);
		goto fail;
	}
	if (mkdtemp(t->tmpl) == NULL) {
		util_errf(err, errlen, "%s: mkdtemp: %s", dir, strerror(errno));
		goto fail;
	}
	t->made = true;
	base = strrchr(t->tmpl, '/') + 1;
	if (strlen(base) >= sizeof(t->tmpname)) {
		util_errf(err, errlen, "%s: temporary name too long", dir);
		goto fail;
	}
	memcpy(t->tmpname, base, strlen(base) + 1);
	(void)chmod(t->tmpl, 0755);
	t->tfd = open(t->tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->tfd < 0) {
		util_errf(err, errlen, "%s: %s", t->tmpl, strerror(errno));
		goto fail;
	}
	pub_delay();
	return 0;
fail:
	publish_txn_abort(t);
	return -1;
}

int
publish_txn_file(struct publish_txn *t, const char *name,
    const unsigned char *buf, size_t len, publish_write_fn fn, void *arg,
    char *err, size_t errlen)
{
	assert(t != NULL && t->tfd >= 0 && (buf != NULL || fn != NULL));
	return pub_write_file(t->tfd, name, buf, len, fn, arg, err, errlen);
}

int
publish_txn_commit(struct publish_txn *t, unsigned keep, char *err,
    size_t errlen)
{
	assert(t != NULL && t->tfd >= 0);
	if (pub_fsync_dir(t->tfd, t->tmpl, err, errlen) != 0)
		goto fail;
	pub_delay();

	/* 2. The directory takes its version name; DIR is made durable. */
	if (pub_gate_pass(t->tmpl, t->vname, err, errlen) != 0)
		goto fail;
	if (renameat(t->dfd, t->tmpname, t->dfd, t->vname) != 0) {
		util_errf(err, errlen, "%s/%s: rename: %s", t->dir, t->vname,
		    strerror(errno));
		goto fail;
	}
	t->renamed = true;
	pub_delay();
	if (pub_fsync_dir(t->dfd, t->dir, err, errlen) != 0)
		goto fail;

	/* 3. Switch "current", last. */
	if (pub_gate_pass(NULL, PUBLISH_CURRENT, err, errlen) != 0 ||
	    pub_switch(t->dfd, t->dir, t->vname, err, errlen) != 0)
		goto fail;
	pub_delay();
	if (pub_fsync_dir(t->dfd, t->dir, err, errlen) != 0) {
		/*
		 * The switch may or may not be durable: point "current" back
		 * at the old pair (or remove it) so DIR is as it was.
		 */
		if (t->have_cur)
			(void)pub_switch(t->dfd, t->dir, t->cur_name, NULL, 0);
		else
			(void)unlinkat(t->dfd, PUBLISH_CURRENT, 0);
		goto fail;
	}

	/* 4. Prune older versions; failures here do not undo the publish. */
	pub_prune(t->dfd, keep, t->version);
	t->made = false;
	publish_txn_abort(t);
	return 0;
fail:
	publish_txn_abort(t);
	return -1;
}

void
publish_txn_abort(struct publish_txn *t)
{
	if (t->made && t->dfd >= 0)
		(void)pub_rmtree(t->dfd, t->renamed ? t->vname : t->tmpname);
	if (t->tfd >= 0)
		(void)close(t->tfd);
	if (t->dfd >= 0)
		(void)close(t->dfd);
	t->dfd = t->tfd = -1;
	t->made = false;
}

int
publish_pair_stream(const char *dir, uint64_t version,
    const unsigned char *filter, size_t filter_len,
    publish_write_fn write_table, void *arg, unsigned keep, char *err,
    size_t errlen)
{
	struct publish_txn t;

	assert(dir != NULL && filter != NULL && write_table != NULL);
	if (publish_txn_begin(&t, dir, version, err, errlen) != 0)
		return -1;
	if (publish_txn_file(&t, PUBLISH_FILTER_NAME, filter, filter_len, NULL,
	    NULL, err, errlen) != 0 ||
	    publish_txn_file(&t, PUBLISH_TABLE_NAME, NULL, 0, write_table, arg,
	    err, errlen) != 0) {
		publish_txn_abort(&t);
		return -1;
	}
	return publish_txn_commit(&t, keep, err, errlen);
}

struct pub_buf {
	const unsigned char *p;
	size_t		 len;
};

static int
pub_write_buf(void *arg, int fd, char *err, size_t errlen)
{
	const struct pub_buf *b = arg;

	if (util_write_all(fd, b->p, b->len) != 0) {
		util_errf(err, errlen, "%s: write: %s", PUBLISH_TABLE_NAME,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
publish_pair(const char *dir, uint64_t version, const unsigned char *filter,
    size_t filter_len, const unsigned char *table, size_t table_len,
    unsigned keep, char *err, size_t errlen)
{
	struct pub_buf b = { table, table_len };

	assert(table != NULL);
	return publish_pair_stream(dir, version, filter, filter_len,
	    pub_write_buf, &b, keep, err, errlen);
}

/* Writes iov into fd; 0, or -1 with errno. */
static int
pub_writev_all(int fd, const struct iovec *iov, int iovcnt)
{
	int i;

	for (i = 0; i < iovcnt; i++)
		if (util_write_all(fd, iov[i].iov_base, iov[i].iov_len) != 0)
			return -1;
	return 0;
}

int
publish_pathv(const char *path, const struct iovec *iov, int iovcnt,
    mode_t mode, int flags, char *err, size_t errlen)
{
	char tmp[PUB_PATH_MAX], dir[PUB_PATH_MAX];
	const char *slash, *name, *step;
	int fd = -1, dfd = -1, n, saved, rc = -1;

	assert(path != NULL && (iov != NULL || iovcnt == 0) && iovcnt >= 0);
	slash = strrchr(path, '/');
	name = slash == NULL ? path : slash + 1;
	n = snprintf(dir, sizeof(dir), "%.*s", slash == NULL ? 1 :
	    slash == path ? 1 : (int)(slash - path), slash == NULL ? "." :
	    path);
	if (*name == '\0' || n < 0 || (size_t)n >= sizeof(dir)) {
		util_errf(err, errlen, "%s: not a file name", path);
		return -1;
	}
	n = snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		util_errf(err, errlen, "%s: path too long", path);
		return -1;
	}
	/* 1. The bytes into a new temporary file beside path, fsynced. */
	step = "create a temporary file";
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		tmp[0] = '\0';
		goto fail;
	}
	step = "chmod";
	if (fchmod(fd, mode) != 0)
		goto fail;
	step = "write";
	if (pub_writev_all(fd, iov, iovcnt) != 0)
		goto fail;
	pub_delay();
	step = "fsync";
	if (pub_fsync(fd) != 0)
		goto fail;
	step = "close";
	n = close(fd);
	fd = -1;
	if (n != 0)
		goto fail;
	/* 2. Renamed over path, or linked where no file is. */
	pub_delay();
	if (pub_gate_pass(tmp, path, err, errlen) != 0) {
		errno = EACCES;
		goto out;
	}
	if ((flags & PUBLISH_EXCL) != 0) {
		if (link(tmp, path) != 0) {
			if (errno == EEXIST) {
				util_errf(err, errlen, "%s: already exists", path);
				goto out;
			}
			step = "link";
			goto fail;
		}
		(void)unlink(tmp);
	} else {
		step = "rename";
		if (rename(tmp, path) != 0)
			goto fail;
	}
	tmp[0] = '\0';
	/* 3. The directory entry made durable. */
	step = "fsync its directory";
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    pub_fsync(dfd) != 0)
		goto fail;
	rc = 0;
	goto out;
fail:
	util_errf(err, errlen, "%s: %s: %s", path, step, strerror(errno));
out:
	saved = errno;
	if (fd >= 0)
		(void)close(fd);
	if (tmp[0] != '\0')
		(void)unlink(tmp);
	if (dfd >= 0)
		(void)close(dfd);
	errno = saved;
	return rc;
}

int
publish_path(const char *path, const void *buf, size_t len, mode_t mode,
    int flags, char *err, size_t errlen)
{
	struct iovec iov;

	iov.iov_base = (void *)(uintptr_t)buf;
	iov.iov_len = len;
	return publish_pathv(path, &iov, 1, mode, flags, err, errlen);
}

int
publish_file(const char *dir, const char *name, const unsigned char *buf,
    size_t len, char *err, size_t errlen)
{
	char path[PUB_PATH_MAX], parent[PUB_PATH_MAX];
	const char *slash;
	struct stat st;
	int pfd, n;

	if (util_path_join(path, sizeof(path), dir, name) != 0 ||
	    strchr(name, '/') != NULL ||
	    *name == '\0') {
		util_errf(err, errlen, "%s: bad file name", name);
		return -1;
	}
	if (stat(dir, &st) != 0 && errno == ENOENT) {
		/* A new directory, made durable in its parent. */
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			util_errf(err, errlen, "%s: mkdir: %s", dir,
			    strerror(errno));
			return -1;
		}
		slash = strrchr(dir, '/');
		n = snprintf(parent, sizeof(parent), "%.*s",
		    slash == NULL ? 1 : slash == dir ? 1 : (int)(slash - dir),
		    slash == NULL ? "." : dir);
		if (n < 0 || (size_t)n >= sizeof(parent) ||
		    (pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
			util_errf(err, errlen, "%s: cannot open the parent "
			    "directory", dir);
			return -1;
		}
		n = pub_fsync_dir(pfd, parent, err, errlen);
		(void)close(pfd);
		if (n != 0)
			return -1;
	}
	return publish_path(path, buf, len, 0644, 0, err, errlen);
}
