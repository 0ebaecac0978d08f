/* pgsrc.h - PostgreSQL as a revocation source: full snapshots, changes since a cursor, wake-ups */
#ifndef REVCHECK_PGSRC_H
#define REVCHECK_PGSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"

/*
 * The default query of a full read: config/postgresql-schema.sql's table.
 * A --query must return a column named "id"; "scope", "revoked_at",
 * "reason" and "expires_at" are optional and found by name.
 */
#define PGSRC_DEFAULT_QUERY \
	"SELECT scope, id, revoked_at, reason, expires_at FROM revcheck_revocations"
/* The channel config/postgresql-schema.sql's trigger notifies. */
#define PGSRC_CHANNEL	"revcheck_changes"
/* Rows fetched per round trip of a full read. */
#define PGSRC_FETCH	10000

struct pgsrc;	/* opaque: one connection */

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
 * READ, READ ONLY transaction into s, through input_read_rows(): every
 * value is checked as a JSON list's is, and a row whose expires_at is at
 * or before o->now is left out. When cursor is not NULL, *cursor is the
 * change horizon of that same snapshot (the xmin of the transaction's
 * snapshot): the changes of every transaction below it are in the rows
 * read. query is one statement (a second one is refused by the server).
 * Returns 0, or -1 with err; s is as it was before the call unless only
 * the final COMMIT failed.
 */
int pgsrc_read_full(struct pgsrc *p, const char *query, struct input_set *s,
    const struct input_opts *o, uint64_t *cursor, char *err, size_t errlen);

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
 * Reads, in one REPEATABLE READ transaction, the changes of every
 * transaction with an id in [from, *to), where *to is set to the horizon
 * of the transaction's snapshot (no transaction below it is still
 * running, so the set is final), and calls fn for each, in order. When
 * *to equals from nothing is read. A hostile value (bad op, empty id,
 * unreadable time) is an error that names the change's seq. Returns 0, or
 * -1 with err (fn may have been called for some changes: the caller
 * discards them).
 */
int pgsrc_read_changes(struct pgsrc *p, uint64_t from, uint64_t *to,
    pgsrc_change_fn fn, void *arg, char *err, size_t errlen);

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
