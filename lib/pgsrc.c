/* pgsrc.c - PostgreSQL as a revocation source: full snapshots, changes since a cursor, wake-ups */
/*
 * Every value from the server is untrusted text: it goes through the same
 * checks as a JSON list's (input_read_rows) and timestamps are parsed, not
 * trusted. The cursor of incremental reads is a transaction horizon (xid8):
 * the changes of the transactions below the oldest one still running are
 * final, whatever order they committed in (config/postgresql-schema.sql).
 */
#include "pgsrc.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "util.h"

#define PGSRC_STR1(x)	#x
#define PGSRC_STR(x)	PGSRC_STR1(x)

struct pgsrc {
	PGconn		*conn;
};

/* Formats "postgresql: what: <server message>" without a trailing newline. */
static void
pg_err(const struct pgsrc *p, const PGresult *res, const char *what,
    char *err, size_t errlen)
{
	const char *m = res != NULL ? PQresultErrorMessage(res) : "";
	size_t n;
	char buf[512];

	if ((m == NULL || *m == '\0') && p != NULL && p->conn != NULL)
		m = PQerrorMessage(p->conn);
	if (m == NULL || *m == '\0')
		m = "unknown error";
	n = strnlen(m, sizeof(buf) - 1);
	memcpy(buf, m, n);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	/* Multi-line server messages become one line. */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n' || buf[i] == '\t')
			buf[i] = ' ';
	snprintf(err, errlen, "postgresql: %s: %s", what, buf);
}

/* Runs a command that returns no rows. 0, or -1 with err. */
static int
pg_cmd(struct pgsrc *p, const char *sql, const char *what, char *err,
    size_t errlen)
{
	PGresult *res = PQexec(p->conn, sql);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		pg_err(p, res, what, err, errlen);
		rc = -1;
	}
	PQclear(res);
	return rc;
}

/* Starts the one kind of transaction a reader uses. 0, or -1 with err. */
static int
pg_begin(struct pgsrc *p, char *err, size_t errlen)
{
	return pg_cmd(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
	    "starting a transaction", err, errlen);
}

/*
 * Ends the transaction: commits when rc is 0, else rolls back and keeps
 * the error already set. Returns rc, or -1 when the commit fails.
 */
static int
pg_end(struct pgsrc *p, int rc, char *err, size_t errlen)
{
	if (rc != 0) {
		PQclear(PQexec(p->conn, "ROLLBACK"));
		return rc;
	}
	return pg_cmd(p, "COMMIT", "ending the transaction", err, errlen);
}

struct pgsrc *
pgsrc_connect(const char *conninfo, char *err, size_t errlen)
{
	struct pgsrc *p;

	assert(conninfo != NULL);
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "postgresql: out of memory");
		return NULL;
	}
	p->conn = PQconnectdb(conninfo);
	if (p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK) {
		pg_err(p, NULL, "cannot connect", err, errlen);
		goto fail;
	}
	/* Timestamps print as "YYYY-MM-DD HH:MM:SS[.f]+00" from here on. */
	if (pg_cmd(p, "SET TimeZone TO 'UTC'", "setting the time zone", err,
	    errlen) != 0 || pg_cmd(p, "SET DateStyle TO 'ISO, YMD'",
	    "setting the date style", err, errlen) != 0)
		goto fail;
	return p;
fail:
	pgsrc_close(p);
	return NULL;
}

void
pgsrc_close(struct pgsrc *p)
{
	if (p == NULL)
		return;
	if (p->conn != NULL)
		PQfinish(p->conn);
	free(p);
}

bool
pgsrc_ok(const struct pgsrc *p)
{
	return p != NULL && p->conn != NULL && PQstatus(p->conn) == CONNECTION_OK;
}

int
pgsrc_parse_time(const char *s, int64_t *out)
{
	char buf[64];
	size_t n = strlen(s);
	uint64_t u;

	if (n > 0 && s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789") == n) {
		if (util_parse_u64(s, (uint64_t)INT64_MAX, &u) != 0)
			return -1;
		*out = (int64_t)u;
		return 0;
	}
	if (n < 3 || n + 4 > sizeof(buf))
		return -1;
	memcpy(buf, s, n + 1);
	/* PostgreSQL prints a whole-hour offset as "+HH": RFC 3339 wants "+HH:MM". */
	if ((buf[n - 3] == '+' || buf[n - 3] == '-') && buf[n - 2] >= '0' &&
	    buf[n - 2] <= '9' && buf[n - 1] >= '0' && buf[n - 1] <= '9')
		memcpy(buf + n, ":00", 4);
	return util_parse_rfc3339(buf, out);
}

/* The snapshot horizon of the current transaction. 0, or -1 with err. */
static int
pg_horizon(struct pgsrc *p, uint64_t *out, char *err, size_t errlen)
{
	PGresult *res;
	int rc = -1;

	res = PQexec(p->conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_err(p, res, "reading the snapshot horizon (PostgreSQL 13 or "
		    "later is needed)", err, errlen);
		goto out;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 1 ||
	    PQgetisnull(res, 0, 0) ||
	    util_parse_u64(PQgetvalue(res, 0, 0), UINT64_MAX, out) != 0) {
		snprintf(err, errlen, "postgresql: the snapshot horizon is not "
		    "an unsigned integer");
		goto out;
	}
	rc = 0;
out:
	PQclear(res);
	return rc;
}

/* ---- full reads --------------------------------------------------------- */

struct full_rd {
	struct pgsrc	*p;
	const struct input_opts *o;
	PGresult	*res;
	int		 row;		/* next row of res */
	bool		 done;		/* the cursor returned no rows */
	uint64_t	 seen;		/* rows fetched, for messages */
	int		 c_scope, c_id, c_at, c_reason, c_exp;
};

/* Column numbers by name; only "id" is required. 0, or -1 with err. */
static int
full_columns(struct full_rd *f, char *err, size_t errlen)
{
	f->c_id = PQfnumber(f->res, "id");
	f->c_scope = PQfnumber(f->res, "scope");
	f->c_at = PQfnumber(f->res, "revoked_at");
	f->c_reason = PQfnumber(f->res, "reason");
	f->c_exp = PQfnumber(f->res, "expires_at");
	if (f->c_id < 0) {
		snprintf(err, errlen, "postgresql: the query returns no column "
		    "named \"id\"");
		return -1;
	}
	return 0;
}

/* input_next_fn over FETCH batches of the cursor "revcheck_full". */
static int
full_next(void *arg, struct input_row *row, char *err, size_t errlen)
{
	struct full_rd *f = arg;
	const char *v;
	int64_t exp;

next_row:
	for (;;) {
		if (f->res != NULL && f->row < PQntuples(f->res))
			break;
		if (f->done)
			return 0;
		PQclear(f->res);
		f->res = PQexec(f->p->conn, "FETCH FORWARD "
		    PGSRC_STR(PGSRC_FETCH) " FROM revcheck_full");
		f->row = 0;
		if (PQresultStatus(f->res) != PGRES_TUPLES_OK) {
			pg_err(f->p, f->res, "running the query", err, errlen);
			return -1;
		}
		if (f->seen == 0 && full_columns(f, err, errlen) != 0)
			return -1;
		if (PQntuples(f->res) == 0)
			f->done = true;
		f->seen += (uint64_t)PQntuples(f->res);
	}
	memset(row, 0, sizeof(*row));
	/* Expired rows are no longer revocations: skipped, not checked. */
	if (f->c_exp >= 0 && !PQgetisnull(f->res, f->row, f->c_exp)) {
		v = PQgetvalue(f->res, f->row, f->c_exp);
		if (pgsrc_parse_time(v, &exp) != 0) {
			snprintf(err, errlen, "postgresql: row %" PRIu64 ": "
			    "expires_at \"%.40s\" is not a time", f->seen -
			    (uint64_t)PQntuples(f->res) + (uint64_t)f->row + 1, v);
			return -1;
		}
		if (exp <= f->o->now) {
			f->row++;
			goto next_row;
		}
	}
	if (PQgetisnull(f->res, f->row, f->c_id)) {
		snprintf(err, errlen, "postgresql: row %" PRIu64 ": id is NULL",
		    f->seen - (uint64_t)PQntuples(f->res) + (uint64_t)f->row + 1);
		return -1;
	}
	row->id = PQgetvalue(f->res, f->row, f->c_id);
	row->id_len = (size_t)PQgetlength(f->res, f->row, f->c_id);
	if (f->c_scope >= 0 && !PQgetisnull(f->res, f->row, f->c_scope))
		row->scope = PQgetvalue(f->res, f->row, f->c_scope);
	if (f->c_reason >= 0 && !PQgetisnull(f->res, f->row, f->c_reason))
		row->reason = PQgetvalue(f->res, f->row, f->c_reason);
	if (f->c_at >= 0 && !PQgetisnull(f->res, f->row, f->c_at)) {
		v = PQgetvalue(f->res, f->row, f->c_at);
		if (pgsrc_parse_time(v, &row->revoked_at) != 0) {
			snprintf(err, errlen, "postgresql: row %" PRIu64 ": "
			    "revoked_at \"%.40s\" is not a time", f->seen -
			    (uint64_t)PQntuples(f->res) + (uint64_t)f->row + 1, v);
			return -1;
		}
	}
	f->row++;
	return 1;
}

int
pgsrc_read_full(struct pgsrc *p, const char *query, struct input_set *s,
    const struct input_opts *o, uint64_t *cursor, char *err, size_t errlen)
{
	struct full_rd f;
	PGresult *res = NULL;
	char *sql = NULL;
	size_t qlen;
	int rc = -1;

	assert(p != NULL && s != NULL && o != NULL);
	if (query == NULL)
		query = PGSRC_DEFAULT_QUERY;
	qlen = strlen(query);
	if (qlen > SIZE_MAX - 64 || (sql = malloc(qlen + 64)) == NULL) {
		snprintf(err, errlen, "postgresql: out of memory");
		return -1;
	}
	snprintf(sql, qlen + 64, "DECLARE revcheck_full NO SCROLL CURSOR FOR %s",
	    query);
	memset(&f, 0, sizeof(f));
	f.p = p;
	f.o = o;
	if (pg_begin(p, err, errlen) != 0)
		goto out;
	/* The first statement takes the snapshot both reads share. */
	if (cursor != NULL && pg_horizon(p, cursor, err, errlen) != 0)
		goto out_end;
	/* The extended protocol runs exactly one statement: no "; COMMIT; ...". */
	res = PQexecParams(p->conn, sql, 0, NULL, NULL, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		pg_err(p, res, "declaring the query's cursor", err, errlen);
		goto out_end;
	}
	if (input_read_rows(s, "postgresql", full_next, &f, o, err,
	    errlen) != 0)
		goto out_end;
	rc = 0;
out_end:
	rc = pg_end(p, rc, err, errlen);
out:
	PQclear(res);
	PQclear(f.res);
	free(sql);
	return rc;
}

/* ---- changes ------------------------------------------------------------ */

int
pgsrc_read_changes(struct pgsrc *p, uint64_t from, uint64_t *to,
    pgsrc_change_fn fn, void *arg, char *err, size_t errlen)
{
	char a[24], b[24];
	const char *params[2] = { a, b }, *op, *v;
	struct pgsrc_change c;
	PGresult *res = NULL;
	uint64_t horizon;
	int i, n, rc = -1;

	assert(p != NULL && to != NULL && fn != NULL);
	if (pg_begin(p, err, errlen) != 0)
		return -1;
	if (pg_horizon(p, &horizon, err, errlen) != 0)
		goto out_end;
	if (horizon < from) {
		snprintf(err, errlen, "postgresql: the server's transaction "
		    "horizon %" PRIu64 " is below the cursor %" PRIu64 " (a "
		    "different server, or one restored from a backup?)",
		    horizon, from);
		goto out_end;
	}
	if (horizon > from) {
		snprintf(a, sizeof(a), "%" PRIu64, from);
		snprintf(b, sizeof(b), "%" PRIu64, horizon);
		res = PQexecParams(p->conn, "SELECT seq, op, scope, id, "
		    "revoked_at, reason, expires_at, changed_at FROM "
		    "revcheck_changes WHERE xid >= $1::text::xid8 AND "
		    "xid < $2::text::xid8 ORDER BY seq", 2, NULL, params,
		    NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			pg_err(p, res, "reading revcheck_changes", err, errlen);
			goto out_end;
		}
		if (PQnfields(res) != 8) {
			snprintf(err, errlen, "postgresql: revcheck_changes "
			    "returned %d columns, not 8", PQnfields(res));
			goto out_end;
		}
		n = PQntuples(res);
		for (i = 0; i < n; i++) {
			const char *seq = PQgetvalue(res, i, 0);

			memset(&c, 0, sizeof(c));
			op = PQgetvalue(res, i, 1);
			if (strcmp(op, "A") != 0 && strcmp(op, "R") != 0) {
				snprintf(err, errlen, "postgresql: change %.20s: "
				    "op \"%.8s\" is neither A nor R", seq, op);
				goto out_end;
			}
			c.removed = op[0] == 'R';
			if (PQgetisnull(res, i, 2) || PQgetisnull(res, i, 3)) {
				snprintf(err, errlen, "postgresql: change %.20s: "
				    "scope or id is NULL", seq);
				goto out_end;
			}
			c.row.scope = PQgetvalue(res, i, 2);
			c.row.id = PQgetvalue(res, i, 3);
			c.row.id_len = (size_t)PQgetlength(res, i, 3);
			if (!PQgetisnull(res, i, 5))
				c.row.reason = PQgetvalue(res, i, 5);
			if ((!PQgetisnull(res, i, 4) && pgsrc_parse_time(
			    v = PQgetvalue(res, i, 4), &c.row.revoked_at) != 0) ||
			    (!PQgetisnull(res, i, 6) && pgsrc_parse_time(
			    v = PQgetvalue(res, i, 6), &c.expires_at) != 0) ||
			    (!PQgetisnull(res, i, 7) && pgsrc_parse_time(
			    v = PQgetvalue(res, i, 7), &c.changed_at) != 0)) {
				snprintf(err, errlen, "postgresql: change %.20s: "
				    "\"%.40s\" is not a time", seq, v);
				goto out_end;
			}
			if (fn(arg, &c, err, errlen) != 0)
				goto out_end;
		}
	}
	rc = 0;
out_end:
	if ((rc = pg_end(p, rc, err, errlen)) == 0)
		*to = horizon;
	PQclear(res);
	return rc;
}

/* ---- wake-ups ----------------------------------------------------------- */

int
pgsrc_listen(struct pgsrc *p, char *err, size_t errlen)
{
	return pg_cmd(p, "LISTEN " PGSRC_CHANNEL, "listening", err, errlen);
}

int
pgsrc_wait(struct pgsrc *p, int timeout_ms, char *err, size_t errlen)
{
	struct pollfd pfd;
	PGnotify *nt;
	int got = 0, rc;

	assert(p != NULL);
	if (PQstatus(p->conn) != CONNECTION_OK) {
		pg_err(p, NULL, "connection lost", err, errlen);
		return -1;
	}
	/* Notifications that arrived with an earlier result count too. */
	while ((nt = PQnotifies(p->conn)) != NULL) {
		PQfreemem(nt);
		got = 1;
	}
	if (got)
		return 1;
	pfd.fd = PQsocket(p->conn);
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (pfd.fd < 0) {
		pg_err(p, NULL, "no socket", err, errlen);
		return -1;
	}
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : (snprintf(err, errlen,
		    "postgresql: poll: %s", strerror(errno)), -1);
	if (rc == 0)
		return 0;
	if (PQconsumeInput(p->conn) != 1) {
		pg_err(p, NULL, "connection lost", err, errlen);
		return -1;
	}
	while ((nt = PQnotifies(p->conn)) != NULL) {
		PQfreemem(nt);
		got = 1;
	}
	return got;
}
