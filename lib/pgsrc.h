/* pgsrc.h - PostgreSQL as a revocation source: full snapshots, changes since a cursor, wake-ups */
#ifndef REVCHECK_PGSRC_H
#define REVCHECK_PGSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "pgsrc_lag.h"
#include "revkey.h"

/*
 * The default query of a full read: config/postgresql-schema.sql's table.
 * A --query must return a column named "id"; "scope", "revoked_at",
 * "reason" and "expires_at" are optional and found by name.
 */
#define PGSRC_DEFAULT_QUERY \
	"SELECT scope, id, revoked_at, reason, expires_at FROM revcheck_revocations"
/* The table of config/postgresql-schema.sql and its trigger that fills revcheck_changes. */
#define PGSRC_TABLE	"revcheck_revocations"
#define PGSRC_TRIGGER	"revcheck_changes_trg"
/* The channel config/postgresql-schema.sql's trigger notifies. */
#define PGSRC_CHANNEL	"revcheck_changes"
/* Rows fetched per round trip of a full read. */
#define PGSRC_FETCH	10000

struct pgsrc;	/* opaque: one connection */

/*
 * The latest and earliest times a row's revoked_at or expires_at is
 * represented by (9999-12-31T23:59:59Z and 1970-01-01T00:00:01Z).
 */
#define PGSRC_TIME_MAX	INT64_C(253402300799)
#define PGSRC_TIME_MIN	INT64_C(1)

/* Rows of a source that no check can name: left out, counted, sampled. */
#define PGSRC_QSAMPLE	5
struct pgsrc_qrow {
	char		 scope[72];	/* cut, bytes outside ASCII '?' */
	char		 id[72];
	char		 why[112];
};
struct pgsrc_quarantine {
	uint64_t	 rows;
	size_t		 nsample;
	struct pgsrc_qrow sample[PGSRC_QSAMPLE];
};

/*
 * Connects with a libpq connection string or postgresql:// URI. The
 * session's time zone is set to UTC. Error messages never repeat the
 * connection string (it may hold a password). NULL with err.
 */
struct pgsrc *pgsrc_connect(const char *conninfo, char *err, size_t errlen);

/* Closes the connection; NULL is fine. */
void pgsrc_close(struct pgsrc *p);

/* True while the connection is usable. */
bool pgsrc_ok(const struct pgsrc *p);

/*
 * Reads every row of query (NULL: PGSRC_DEFAULT_QUERY) in one REPEATABLE
 * READ, READ ONLY transaction into s, through input_read_rows(): a row
 * no check can name is left out and counted (pgsrc_row_fix(),
 * pgsrc_quarantined(): the tally starts over), times are read with
 * pgsrc_parse_time_lenient(), and a row whose expires_at is at or before
 * o->now - o->expiry_grace is left out. A result with no row covers the
 * default scope with no keys (the database is the authority: o's
 * allow_empty is not asked). When cursor is not NULL, *cursor is the
 * change horizon of that same snapshot (the xmin of the transaction's
 * snapshot): the changes of every transaction below it are in the rows
 * read. query is one statement (a second one is refused by the server).
 * Returns 0, or -1 with err; s is as it was before the call unless only
 * the final COMMIT failed.
 */
int pgsrc_read_full(struct pgsrc *p, const char *query, struct input_set *s,
    const struct input_opts *o, uint64_t *cursor, char *err, size_t errlen);

/*
 * The issued set of exact scopes, PGSRC_ISSUED_TABLE (scope, id,
 * issued_at), as read in the snapshot of a pgsrc_read_full_issued():
 * present when the table exists and the role may read it (unreadable
 * when it may not: no exact scope then); cutoff is the transaction's start
 * (now(), not after its snapshot); the keys are spooled to an unlinked
 * temporary file (never held in memory), and counted per scope. A row
 * whose id no check can name (revkey_from_text refuses it) makes its
 * scope unusable (bad > 0): an issued set short of an id could answer
 * that id revoked.
 */
#define PGSRC_ISSUED_TABLE	"revcheck_issued"

struct pgsrc_issued_scope {
	char		 name[REVKEY_SCOPE_MAX + 1];
	uint64_t	 rows;
	uint64_t	 bad;
};

struct pgsrc_issued {
	bool		 present;
	bool		 unreadable;	/* the table exists, SELECT not granted */
	int64_t		 cutoff;
	FILE		*spool;		/* u16 length, encoded key; ... */
	struct pgsrc_issued_scope *scopes;
	size_t		 nscopes;
	uint64_t	 bad_scope;	/* rows whose scope is not valid */
};

/*
 * pgsrc_read_full, and when issued is not NULL the issued set into it in
 * the same transaction (memset to zero first; pgsrc_issued_free releases
 * it). Returns as pgsrc_read_full.
 */
int pgsrc_read_full_issued(struct pgsrc *p, const char *query,
    struct input_set *s, const struct input_opts *o, uint64_t *cursor,
    struct pgsrc_issued *issued, char *err, size_t errlen);

void pgsrc_issued_free(struct pgsrc_issued *is);

/*
 * Reads the issued set inside the current transaction (pgsrc_int.h's
 * callers only). 0, or -1 with err.
 */
int pgsrc_issued_read(struct pgsrc *p, struct pgsrc_issued *is, char *err,
    size_t errlen);

/*
 * Scope scope's keys of the spool as an exact_src (re-readable); the
 * stream state lives in st, which must outlive src's use.
 */
struct pgsrc_issued_stream {
	const struct pgsrc_issued *is;
	const char	*scope;
	size_t		 slen;
	unsigned char	 enc[REVKEY_ENC_MAX];
};

void pgsrc_issued_src(struct pgsrc_issued_stream *st,
    const struct pgsrc_issued *is, const char *scope, struct exact_src *src);

/* Where pgsrc_row_fix() writes what it represents otherwise (caller-owned). */
struct pgsrc_rowbuf {
	char	reason[TABLE_REASON_MAX];	/* a cleaned reason */
	char	serial[2 * REVKEY_ID_MAX + 2];	/* a normalised serial */
};

/* What pgsrc_row_fix() represented otherwise than it reads (bits). */
#define PGSRC_FIX_REASON	1
#define PGSRC_FIX_SERIAL	2

/*
 * Whether a row of the source can be represented, and how. Returns 0
 * when it is used as it is; else the PGSRC_FIX_ bits of what it
 * represents otherwise, in buf: PGSRC_FIX_REASON when its reason was
 * cleaned (row->reason then points to buf->reason: cut to
 * TABLE_REASON_MAX - 1 characters, each byte or UTF-8 character outside
 * printable ASCII made '?'; a reason is metadata, the revocation stays);
 * PGSRC_FIX_SERIAL when an X.509 serial a check could not read as it is
 * was normalised (row->id then points to buf->serial): white space
 * around it and colons or white space between its hex digits left out,
 * so that the row revokes the serial a certificate with those digits
 * carries ("12:3" is 0x0123, as the removal recheck reads it), never
 * left out, which could un-revoke it. Returns -1 with why when no check
 * can name the row, which is then quarantined: its scope (or
 * default_scope for a row without one; NULL: "default") is one
 * revkey_scope_valid() refuses, or its id one revkey_from_text()
 * refuses in that scope (empty, over REVKEY_ID_MAX bytes) and, for a
 * serial, also once normalised (no hex digit, a character other than
 * hex digits and separators, more than 2 * REVKEY_ID_MAX digits): a
 * check's id and scope go through the same two functions. Sets
 * row->any_bytes (control bytes in an id can be named by a check).
 */
int pgsrc_row_fix(struct input_row *row, const char *default_scope,
    struct pgsrc_rowbuf *buf, char *why, size_t whylen);

/*
 * Parses a revoked_at (expiry false) or expires_at (expiry true) value
 * as the server prints it, never refusing one: returns 0 when it is
 * represented as it is, 1 when it was represented conservatively (a
 * revocation is never shortened): "infinity" is PGSRC_TIME_MAX for a
 * revoked_at (a subject or session cutoff then revokes every token) and
 * no expiry (0) for an expires_at; "-infinity", a BC date or a time
 * before 1970 is PGSRC_TIME_MIN (an expires_at then has passed); a year
 * after 9999 is PGSRC_TIME_MAX, or no expiry; text that is no time at
 * all is PGSRC_TIME_MAX for a revoked_at and no expiry for an
 * expires_at.
 */
int pgsrc_parse_time_lenient(const char *s, bool expiry, int64_t *out);

/*
 * The rows quarantined on p: by the last pgsrc_read_full() (which starts
 * the tally over), plus the added rows of pgsrc_read_changes() since.
 * Each quarantined row is also logged (a warning naming its scope, its
 * id cut to 64 bytes and why), once per process for the same row.
 */
const struct pgsrc_quarantine *pgsrc_quarantined(const struct pgsrc *p);

/* Starts p's tally over. */
void pgsrc_quarantine_clear(struct pgsrc *p);

/* One change from revcheck_changes. */
struct pgsrc_change {
	bool		 removed;	/* 'R': the key is no longer revoked */
	struct input_row row;		/* scope is never NULL here */
	int64_t		 expires_at;	/* 0 when none */
	int64_t		 changed_at;	/* when the row changed; 0 unknown */
};

/*
 * Called once per change, in the order the changes were made. Returns 0,
 * or -1 with err to stop the read.
 */
typedef int (*pgsrc_change_fn)(void *arg, const struct pgsrc_change *c,
    char *err, size_t errlen);

/*
 * An incremental read is one snapshot: pgsrc_snapshot_begin() starts a
 * REPEATABLE READ, READ ONLY transaction and sets *horizon to the horizon
 * of its snapshot (no transaction below it is still running, so the
 * changes of [from, *horizon) are final and every one of them is visible
 * to the reads that follow). A horizon below from is an error (another
 * server, or one restored from a backup). pgsrc_read_changes(),
 * pgsrc_read_expired() and pgsrc_read_live() read inside it;
 * pgsrc_snapshot_end() ends it. Returns 0, or -1 with err and no
 * transaction left open.
 */
int pgsrc_snapshot_begin(struct pgsrc *p, uint64_t from, uint64_t *horizon,
    char *err, size_t errlen);

/*
 * Ends the snapshot: commits when rc is 0, else rolls back and keeps the
 * error already in err. Returns rc, or -1 with err when the commit fails.
 */
int pgsrc_snapshot_end(struct pgsrc *p, int rc, char *err, size_t errlen);

/*
 * Checks that PGSRC_TRIGGER logs every change of PGSRC_TABLE: present,
 * enabled, AFTER INSERT OR UPDATE OR DELETE FOR EACH ROW, no WHEN, no
 * column list, calling revcheck_changes_log(). A row written while it
 * does not is in no change, so the follower must not publish deltas.
 * Inside a snapshot, when changed is not NULL, *changed tells whether the
 * trigger or its function was created or altered by a transaction at or
 * above from (a trigger disabled and enabled again since the cursor: the
 * rows written in between are in no change, and only a full read finds
 * them). Returns 0, or -1 with err.
 */
int pgsrc_check_trigger(struct pgsrc *p, uint64_t from, bool *changed,
    char *err, size_t errlen);

/*
 * Inside a snapshot: calls fn for the changes of every transaction with
 * an id in [from, to), in the order they were made (nothing when to
 * equals from). A change no check can name is skipped (an added one
 * counted, as pgsrc_read_full() counts rows), times are read with
 * pgsrc_parse_time_lenient(); a bad op or a NULL scope or id (which
 * revcheck_changes refuses) is an error that names the change's seq. Returns 0, or -1 with err (fn may
 * have been called for some changes: the caller discards them).
 */
int pgsrc_read_changes(struct pgsrc *p, uint64_t from, uint64_t to,
    pgsrc_change_fn fn, void *arg, char *err, size_t errlen);

/*
 * What pgsrc_prepare_rows() could prepare over a query: the expiry sweep
 * (the query returns an expires_at column the server compares with a
 * time) and the removal recheck.
 */
#define PGSRC_CAN_SWEEP		0x1
#define PGSRC_CAN_RECHECK	0x2

/*
 * Prepares on this connection, outside any transaction, the statements
 * of pgsrc_read_expired() and pgsrc_read_live() over query (NULL:
 * PGSRC_DEFAULT_QUERY; a trailing ';' is dropped), fitted to the columns
 * the query returns. Returns the PGSRC_CAN_* bits that were prepared;
 * when one is missing, err says why (a statement the server refused, no
 * expires_at column) and the connection is still usable. Returns -1 with
 * err when the connection failed.
 */
int pgsrc_prepare_rows(struct pgsrc *p, const char *query, char *err,
    size_t errlen);

/*
 * A row of the source query, as the sweep and the recheck see it: scope
 * is NULL when the query has no scope column or the value is NULL, as in
 * a full read. Returns 0, or -1 with err to stop the read.
 */
typedef int (*pgsrc_row_fn)(void *arg, const struct input_row *row,
    char *err, size_t errlen);

/*
 * Inside a snapshot (PGSRC_CAN_SWEEP): calls fn for every row of the
 * query whose expires_at is after `after` and at or before `through`
 * (Unix seconds): the revocations that expired in that window. Nothing
 * is read when through <= after. Rows are passed as they are (fn checks
 * them). Returns 0, or -1 with err.
 */
int pgsrc_read_expired(struct pgsrc *p, int64_t after, int64_t through,
    pgsrc_row_fn fn, void *arg, char *err, size_t errlen);

/*
 * Inside a snapshot (PGSRC_CAN_RECHECK): calls fn for every row of the
 * query that is still in force at `at` (expires_at NULL or after it) and
 * may be one of the n keys: for a key of an x509: scope, every spelling of
 * its serial (case, "0x", ':', leading zeros, sign: rows are matched on
 * the serial's digits, so fn gets a superset and compares keys exactly);
 * for any other key, its exact id. default_scope is the scope of a row
 * without one (as in a full read). Returns 0, or -1 with err.
 */
int pgsrc_read_live(struct pgsrc *p, const struct revkey *const *keys,
    size_t n, const char *default_scope, int64_t at, pgsrc_row_fn fn,
    void *arg, char *err, size_t errlen);

/*
 * The text the recheck compares a key's id with: for an x509: scope the
 * serial's magnitude as lowercase hex digits without leading zeros (""
 * for zero), which is what the server computes from every spelling of it;
 * for any other scope the id itself. Returns the length written (out is
 * NUL-terminated), or -1 when cap is too small.
 */
long pgsrc_key_match_text(const struct revkey *k, char *out, size_t cap);

/* LISTENs on PGSRC_CHANNEL. 0, or -1 with err. */
int pgsrc_listen(struct pgsrc *p, char *err, size_t errlen);

/*
 * Waits up to timeout_ms for a notification (any number of them count as
 * one). Returns 1 when woken by one, 0 on timeout or EINTR, -1 with err
 * when the connection broke.
 */
int pgsrc_wait(struct pgsrc *p, int timeout_ms, char *err, size_t errlen);

/*
 * Parses a timestamp as PostgreSQL prints it in ISO style ("2026-11-30
 * 21:09:48.123456+00"), RFC 3339, or whole seconds since the epoch.
 * Returns 0, or -1 (infinity, BC dates, garbage).
 */
int pgsrc_parse_time(const char *s, int64_t *out);

#endif
