/* publish.h - the output directory: versioned pairs, atomic switch, pruning */
#ifndef REVCHECK_PUBLISH_H
#define REVCHECK_PUBLISH_H

#include <sys/types.h>
#include <sys/uio.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Directory layout (docs/FORMAT.md):
 *   DIR/v00000000000000000042/filter.rcf   the signed filter
 *   DIR/v00000000000000000042/table.rct    its authoritative table
 *   DIR/current -> v00000000000000000042    symlink, switched last
 * A reader resolves "current" once (publish_current) and opens both files
 * inside that version directory, so it never mixes two pairs.
 */
#define PUBLISH_CURRENT		"current"
#define PUBLISH_FILTER_NAME	"filter.rcf"
#define PUBLISH_TABLE_NAME	"table.rct"

/* "v" and 20 digits: the name of a version's directory. */
#define PUBLISH_VNAME_LEN 21

/*
 * Resolves DIR/current. On success returns 0, writes the version
 * directory's path into vdir (cap bytes) and the version into *version.
 * Returns 1 when DIR has no current pair yet, -1 with err on failure.
 */
int publish_current(const char *dir, char *vdir, size_t cap,
    uint64_t *version, char *err, size_t errlen);

/*
 * Finds the newest version directory in DIR below version `below` (the
 * one kept before the current one). Returns 0 with its path in vdir and
 * its version in *version, 1 when there is none (or no DIR), -1 with err
 * when DIR cannot be read.
 */
int publish_previous(const char *dir, uint64_t below, char *vdir,
    size_t cap, uint64_t *version, char *err, size_t errlen);

/*
 * Publishes a pair as version: writes both files into a temporary
 * directory inside DIR, fsyncs them and it, renames it to its version
 * name, fsyncs DIR, then switches "current" with a rename of a fresh
 * symlink and fsyncs DIR again. Any failure (an fsync error included,
 * never retried) removes the temporaries and leaves DIR as it was.
 * Afterwards keeps the newest `keep` versions and removes older ones.
 * Returns 0, or -1 with err.
 */
int publish_pair(const char *dir, uint64_t version,
    const unsigned char *filter, size_t filter_len,
    const unsigned char *table, size_t table_len, unsigned keep,
    char *err, size_t errlen);

/*
 * Writes the table into fd (a new, empty file) and returns 0, or -1 with
 * err. Used by publish_pair_stream so a large table never has to exist
 * in memory as one buffer.
 */
typedef int (*publish_write_fn)(void *arg, int fd, char *err, size_t errlen);

/*
 * publish_pair with the table produced by write_table(arg, fd, ...) instead
 * of a buffer. Same steps, guarantees and return values. Concurrent
 * publishers to one DIR are refused (an exclusive flock on DIR). The
 * version must be at least 1 and above the current one, or DIR is left
 * untouched. Leftovers of a killed run (temporary directories, a
 * temporary symlink, version directories above "current") are removed
 * before the new pair is written.
 *
 * Test-only: when the environment variable REVCHECK_PUBLISH_DELAY_US is
 * set, the publisher sleeps that many microseconds between steps, so that
 * tests can kill it in the middle of a publish. Never set it in production.
 */
int publish_pair_stream(const char *dir, uint64_t version,
    const unsigned char *filter, size_t filter_len,
    publish_write_fn write_table, void *arg, unsigned keep,
    char *err, size_t errlen);

/*
 * publish_pair_stream in steps, for a caller that writes the files while
 * it computes something else (pair_build_publish writes the table while
 * the filter is built). publish_txn_begin checks the version and locks DIR
 * exactly as publish_pair_stream does, and makes the temporary directory;
 * publish_txn_file writes and fsyncs one file into it (from buf, or through
 * fn when fn is not NULL; distinct files may be written by different
 * threads at once); publish_txn_commit renames, switches and prunes;
 * publish_txn_abort removes the temporary directory and unlocks DIR. After a
 * failed begin or commit the transaction is already aborted; after a
 * failed publish_txn_file the caller aborts it. Each returns 0, or -1 with
 * err.
 */
struct publish_txn {
	int		 dfd;		/* DIR, flocked */
	int		 tfd;		/* the temporary directory */
	uint64_t	 version;
	bool		 have_cur;
	bool		 made;		/* the temporary directory exists */
	bool		 renamed;	/* ... under its version name */
	char		 dir[4096];
	char		 tmpl[4096];
	char		 tmpname[64];
	char		 vname[PUBLISH_VNAME_LEN + 1];
	char		 cur_name[PUBLISH_VNAME_LEN + 1];
};

int publish_txn_begin(struct publish_txn *t, const char *dir, uint64_t version,
    char *err, size_t errlen);
int publish_txn_file(struct publish_txn *t, const char *name,
    const unsigned char *buf, size_t len, publish_write_fn fn, void *arg,
    char *err, size_t errlen);
int publish_txn_commit(struct publish_txn *t, unsigned keep, char *err,
    size_t errlen);
void publish_txn_abort(struct publish_txn *t);

/*
 * Test-only: replaces fsync() for the publisher (NULL restores it), so
 * tests can inject an fsync failure.
 */
void publish_set_fsync_hook(int (*fn)(int fd));

/*
 * Writes the bytes of iov[0..iovcnt) as the file path in one durable step,
 * the one way revcheck replaces a file (keys, rollback state, an edge's
 * persisted filter, fetched CRLs, delta chain files): a new temporary file
 * beside path with exactly mode (the umask does not apply), fsynced, then
 * renamed over path, or with PUBLISH_EXCL linked to path only if no file
 * has that name (EEXIST: "already exists"), and path's directory fsynced.
 * A reader sees the old file or the new one, never a part of one. On any
 * failure path is as it was and no temporary is left. Returns 0, or -1
 * with err naming path and the step that failed, errno that step's.
 */
#define PUBLISH_EXCL	0x1
int publish_pathv(const char *path, const struct iovec *iov, int iovcnt,
    mode_t mode, int flags, char *err, size_t errlen);

/* publish_pathv() of one buffer. */
int publish_path(const char *path, const void *buf, size_t len, mode_t mode,
    int flags, char *err, size_t errlen);

/*
 * publish_path() of dir/name, mode 0644; dir is created when missing (one
 * level; its parent is fsynced). For delta chain files (lib/delta.h),
 * which a single follower writes. Returns 0, or -1 with err.
 */
int publish_file(const char *dir, const char *name, const unsigned char *buf,
    size_t len, char *err, size_t errlen);

/*
 * A gate asked immediately before anything becomes visible in an output
 * directory: before publish_pathv() renames or links its file (tmp is the
 * temporary file, path the name it takes) and before publish_txn_commit()
 * renames a version directory or switches "current" (tmp the directory or
 * NULL, path the name it takes). 0 lets the step go ahead; -1 (with err)
 * refuses it, and the publish fails as on any error: temporaries removed,
 * the directory as it was. Set by a writer that must prove it is the only
 * one (filterbuild follow's election); NULL (the default) lets all pass.
 * Process-wide; set it before any thread publishes.
 */
typedef int (*publish_gate_fn)(void *arg, const char *tmp, const char *path,
    char *err, size_t errlen);
void publish_set_gate(publish_gate_fn fn, void *arg);

/* Writes "v" and the version as 20 digits into out[22]. */
void publish_version_name(char out[PUBLISH_VNAME_LEN + 1], uint64_t version);

#endif
