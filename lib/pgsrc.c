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
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "util.h"

#define PGSRC_STR1(x)	#x
#define PGSRC_STR(x)	PGSRC_STR1(x)

/* Names of the statements pgsrc_prepare_rows() prepares. */
#define PG_ST_SWEEP	"revcheck_sweep"
#define PG_ST_LIVE	"revcheck_live"
#define PG_ST_LIVE_SER	"revcheck_live_serial"
/* Keys per execution of a recheck statement. */
#define PG_LIVE_BATCH	10000

struct pgsrc {
	PGconn		*conn;
	int		 can;		/* PGSRC_CAN_* prepared */
	int		 ncols;		/* columns of the prepared statements */
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

/*
 * The time in column col of row i into *out (left as it is when NULL).
 * 0, or -1 with *bad set to the value that is not a time.
 */
static int
pg_time(const PGresult *res, int i, int col, int64_t *out, const char **bad)
{
	if (PQgetisnull(res, i, col))
		return 0;
	*bad = PQgetvalue(res, i, col);
	return pgsrc_parse_time(*bad, out);
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
		if (exp <= f->o->now - f->o->expiry_grace) {
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
pgsrc_snapshot_begin(struct pgsrc *p, uint64_t from, uint64_t *horizon,
    char *err, size_t errlen)
{
	assert(p != NULL && horizon != NULL);
	if (pg_begin(p, err, errlen) != 0)
		return -1;
	if (pg_horizon(p, horizon, err, errlen) != 0)
		return pg_end(p, -1, err, errlen);
	if (*horizon < from) {
		snprintf(err, errlen, "postgresql: the server's transaction "
		    "horizon %" PRIu64 " is below the cursor %" PRIu64 " (a "
		    "different server, or one restored from a backup?)",
		    *horizon, from);
		return pg_end(p, -1, err, errlen);
	}
	return 0;
}

int
pgsrc_snapshot_end(struct pgsrc *p, int rc, char *err, size_t errlen)
{
	assert(p != NULL);
	return pg_end(p, rc, err, errlen);
}

int
pgsrc_read_changes(struct pgsrc *p, uint64_t from, uint64_t to,
    pgsrc_change_fn fn, void *arg, char *err, size_t errlen)
{
	char a[24], b[24];
	const char *params[2] = { a, b }, *op, *v;
	struct pgsrc_change c;
	PGresult *res = NULL;
	int i, n, rc = -1;

	assert(p != NULL && fn != NULL && to >= from);
	if (to == from)
		return 0;
	snprintf(a, sizeof(a), "%" PRIu64, from);
	snprintf(b, sizeof(b), "%" PRIu64, to);
	res = PQexecParams(p->conn, "SELECT seq, op, scope, id, "
	    "revoked_at, reason, expires_at, changed_at FROM "
	    "revcheck_changes WHERE xid >= $1::text::xid8 AND "
	    "xid < $2::text::xid8 ORDER BY seq", 2, NULL, params,
	    NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_err(p, res, "reading revcheck_changes", err, errlen);
		goto out;
	}
	if (PQnfields(res) != 8) {
		snprintf(err, errlen, "postgresql: revcheck_changes "
		    "returned %d columns, not 8", PQnfields(res));
		goto out;
	}
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		const char *seq = PQgetvalue(res, i, 0);

		memset(&c, 0, sizeof(c));
		op = PQgetvalue(res, i, 1);
		if (strcmp(op, "A") != 0 && strcmp(op, "R") != 0) {
			snprintf(err, errlen, "postgresql: change %.20s: "
			    "op \"%.8s\" is neither A nor R", seq, op);
			goto out;
		}
		c.removed = op[0] == 'R';
		if (PQgetisnull(res, i, 2) || PQgetisnull(res, i, 3)) {
			snprintf(err, errlen, "postgresql: change %.20s: "
			    "scope or id is NULL", seq);
			goto out;
		}
		c.row.scope = PQgetvalue(res, i, 2);
		c.row.id = PQgetvalue(res, i, 3);
		c.row.id_len = (size_t)PQgetlength(res, i, 3);
		if (!PQgetisnull(res, i, 5))
			c.row.reason = PQgetvalue(res, i, 5);
		if (pg_time(res, i, 4, &c.row.revoked_at, &v) != 0 ||
		    pg_time(res, i, 6, &c.expires_at, &v) != 0 ||
		    pg_time(res, i, 7, &c.changed_at, &v) != 0) {
			snprintf(err, errlen, "postgresql: change %.20s: "
			    "\"%.40s\" is not a time", seq, v);
			goto out;
		}
		if (fn(arg, &c, err, errlen) != 0)
			goto out;
	}
	rc = 0;
out:
	PQclear(res);
	return rc;
}

/*
 * The full transaction id of a 32-bit one (a tuple's xmin) written within
 * 2^32 transactions before next (the snapshot's xmax). 0 for the frozen
 * and bootstrap ids: written before anything the follower read.
 */
static uint64_t
pg_xid_full(uint64_t next, uint64_t xid)
{
	uint32_t back;

	if (xid < 3 || xid > UINT32_MAX)
		return 0;
	back = (uint32_t)next - (uint32_t)xid;
	return next >= back ? next - back : 0;
}

int
pgsrc_check_trigger(struct pgsrc *p, uint64_t from, bool *changed,
    char *err, size_t errlen)
{
	PGresult *res;
	uint64_t next, txmin, fxmin;
	long type;
	char *end;
	int rc = -1;

	assert(p != NULL);
	res = PQexec(p->conn, "SELECT t.tgenabled::text, t.tgtype::int::text, "
	    "t.tgqual IS NULL AND t.tgattr = ''::int2vector AND "
	    "f.proname = 'revcheck_changes_log', t.xmin::text, f.xmin::text, "
	    "pg_snapshot_xmax(pg_current_snapshot())::text FROM pg_trigger t "
	    "JOIN pg_proc f ON f.oid = t.tgfoid WHERE t.tgrelid = "
	    "to_regclass('" PGSRC_TABLE "') AND t.tgname = '" PGSRC_TRIGGER "'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_err(p, res, "reading the trigger " PGSRC_TRIGGER, err, errlen);
		goto out;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 6) {
		snprintf(err, errlen, "postgresql: " PGSRC_TABLE " has no "
		    "trigger " PGSRC_TRIGGER ": its changes would reach no "
		    "delta (apply config/postgresql-schema.sql)");
		goto out;
	}
	/* 'O' fires in a normal session, 'A' always; 'D' never, 'R' on replicas only. */
	if (strcmp(PQgetvalue(res, 0, 0), "O") != 0 &&
	    strcmp(PQgetvalue(res, 0, 0), "A") != 0) {
		snprintf(err, errlen, "postgresql: the trigger " PGSRC_TRIGGER
		    " on " PGSRC_TABLE " is disabled (tgenabled '%.4s'): its "
		    "changes would reach no delta (ALTER TABLE " PGSRC_TABLE
		    " ENABLE TRIGGER " PGSRC_TRIGGER ")", PQgetvalue(res, 0, 0));
		goto out;
	}
	/* ROW, INSERT, DELETE, UPDATE; not BEFORE, not INSTEAD OF. */
	errno = 0;
	type = strtol(PQgetvalue(res, 0, 1), &end, 10);
	if (errno != 0 || *end != '\0' || (type & 0x5f) != 0x1d ||
	    strcmp(PQgetvalue(res, 0, 2), "t") != 0) {
		snprintf(err, errlen, "postgresql: the trigger " PGSRC_TRIGGER
		    " on " PGSRC_TABLE " does not log every insert, update "
		    "and delete with revcheck_changes_log() (AFTER, FOR EACH "
		    "ROW, no WHEN, no column list; apply "
		    "config/postgresql-schema.sql again)");
		goto out;
	}
	if (util_parse_u64(PQgetvalue(res, 0, 3), UINT32_MAX, &txmin) != 0 ||
	    util_parse_u64(PQgetvalue(res, 0, 4), UINT32_MAX, &fxmin) != 0 ||
	    util_parse_u64(PQgetvalue(res, 0, 5), UINT64_MAX, &next) != 0) {
		snprintf(err, errlen, "postgresql: the trigger's transaction "
		    "ids are not unsigned integers");
		goto out;
	}
	if (changed != NULL)
		*changed = pg_xid_full(next, txmin) >= from ||
		    pg_xid_full(next, fxmin) >= from;
	rc = 0;
out:
	PQclear(res);
	return rc;
}

/* ---- rows of the source query: the expiry sweep, removal rechecks ------- */

/*
 * The SQL of the three statements over query, with the columns it has.
 * The recheck's "IN (SELECT * FROM unnest(...))" on the plain columns
 * lets the server use the (scope, id) primary key of the default table; a
 * row whose scope is NULL belongs to the default scope ($4), and is found
 * by a second branch (an index scan of "scope IS NULL" there).
 */
struct pg_cols {
	bool	 scope, at, reason, exp;
};

static int
pg_stmt_sql(char **out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
pg_stmt_sql(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		*out = NULL;
	return n < 0 ? -1 : 0;
}

/* Prepares one statement; 0, or -1 with err ("what: server message"). */
static int
pg_prepare(struct pgsrc *p, const char *name, const char *sql, int n,
    const Oid *types, const char *what, char *err, size_t errlen)
{
	PGresult *res = PQprepare(p->conn, name, sql, n, types);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		pg_err(p, res, what, err, errlen);
		rc = -1;
	}
	PQclear(res);
	return rc;
}

int
pgsrc_prepare_rows(struct pgsrc *p, const char *query, char *err,
    size_t errlen)
{
	/* text[] (1009), int8 (20), text (25): types the server needs no guess for. */
	static const Oid sweep_t[2] = { 20, 20 };
	static const Oid live_t[4] = { 1009, 1009, 20, 25 };
	char *q = NULL, *probe = NULL, *sweep = NULL, *live = NULL, *ser = NULL;
	const char *sc, *at, *rs, *inforce;
	struct pg_cols c;
	PGresult *res = NULL;
	size_t qlen;
	int ret = -1;

	assert(p != NULL);
	err[0] = '\0';
	p->can = 0;
	if (query == NULL)
		query = PGSRC_DEFAULT_QUERY;
	/* A subquery cannot end in ';' (a full read's cursor does not mind). */
	qlen = strlen(query);
	while (qlen > 0 && (query[qlen - 1] == ';' || query[qlen - 1] == ' ' ||
	    query[qlen - 1] == '\n' || query[qlen - 1] == '\t' ||
	    query[qlen - 1] == '\r'))
		qlen--;
	if (qlen > INT_MAX || pg_stmt_sql(&q, "%.*s", (int)qlen, query) != 0 ||
	    pg_stmt_sql(&probe, "SELECT * FROM (%s) q LIMIT 0", q) != 0) {
		snprintf(err, errlen, "postgresql: out of memory");
		goto out;
	}
	res = PQexecParams(p->conn, probe, 0, NULL, NULL, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_err(p, res, "the query as a subquery", err, errlen);
		ret = pgsrc_ok(p) ? 0 : -1;
		goto out;
	}
	if (PQfnumber(res, "id") < 0) {
		snprintf(err, errlen, "postgresql: the query returns no column "
		    "named \"id\"");
		ret = 0;
		goto out;
	}
	c.scope = PQfnumber(res, "scope") >= 0;
	c.at = PQfnumber(res, "revoked_at") >= 0;
	c.reason = PQfnumber(res, "reason") >= 0;
	c.exp = PQfnumber(res, "expires_at") >= 0;
	sc = c.scope ? "q.scope::text" : "NULL::text";
	at = c.at ? "q.revoked_at" : "NULL::text";
	rs = c.reason ? "q.reason::text" : "NULL::text";
	inforce = c.exp ? "(q.expires_at IS NULL OR q.expires_at > "
	    "to_timestamp($3::float8))" : "$3 IS NOT NULL";
	if (pg_stmt_sql(&sweep, "SELECT %s, q.id::text FROM (%s) q WHERE "
	    "q.expires_at > to_timestamp($1::float8) AND q.expires_at <= "
	    "to_timestamp($2::float8)", sc, q) != 0 ||
	    pg_stmt_sql(&live, c.scope ?
	    "SELECT q.scope::text, q.id::text, %2$s, %3$s FROM (%1$s) q WHERE "
	    "(q.scope::text, q.id::text) IN (SELECT * FROM unnest($1, $2)) "
	    "AND %4$s UNION ALL "
	    "SELECT NULL::text, q.id::text, %2$s, %3$s FROM (%1$s) q WHERE "
	    "q.scope IS NULL AND ($4, q.id::text) IN (SELECT * FROM "
	    "unnest($1, $2)) AND %4$s" :
	    "SELECT NULL::text, q.id::text, %2$s, %3$s FROM (%1$s) q WHERE "
	    "($4, q.id::text) IN (SELECT * FROM unnest($1, $2)) AND %4$s",
	    q, at, rs, inforce) != 0 ||
	    pg_stmt_sql(&ser, "SELECT %2$s, q.id::text, %3$s, %4$s FROM (%1$s) q "
	    "WHERE coalesce(%2$s, $4) = ANY($1) AND (coalesce(%2$s, $4), "
	    "ltrim(regexp_replace(lower(q.id::text), '[^0-9a-f]', '', 'g'), "
	    "'0')) IN (SELECT * FROM unnest($1, $2)) AND %5$s",
	    q, sc, at, rs, inforce) != 0) {
		snprintf(err, errlen, "postgresql: out of memory");
		goto out;
	}
	if (pg_prepare(p, PG_ST_LIVE, live, 4, live_t, "preparing the "
	    "removal recheck", err, errlen) == 0 && pg_prepare(p,
	    PG_ST_LIVE_SER, ser, 4, live_t, "preparing the removal recheck "
	    "of serials", err, errlen) == 0)
		p->can |= PGSRC_CAN_RECHECK;
	if (!pgsrc_ok(p))
		goto out;
	if (!c.exp) {
		if (err[0] == '\0')
			snprintf(err, errlen, "postgresql: the query returns no "
			    "column named \"expires_at\": nothing expires");
	} else if (pg_prepare(p, PG_ST_SWEEP, sweep, 2, sweep_t, "preparing "
	    "the expiry sweep", err, errlen) == 0) {
		p->can |= PGSRC_CAN_SWEEP;
	}
	if (!pgsrc_ok(p))
		goto out;
	ret = p->can;
out:
	PQclear(res);
	free(q);
	free(probe);
	free(sweep);
	free(live);
	free(ser);
	return ret;
}

/*
 * Runs a prepared statement of rows (scope, id[, revoked_at, reason]) and
 * calls fn for each. 0, or -1 with err.
 */
static int
pg_rows(struct pgsrc *p, const char *name, int nparams,
    const char *const *params, const char *what, pgsrc_row_fn fn, void *arg,
    char *err, size_t errlen)
{
	struct input_row row;
	PGresult *res;
	const char *v;
	int i, n, nf, rc = -1;

	res = PQexecPrepared(p->conn, name, nparams, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_err(p, res, what, err, errlen);
		goto out;
	}
	nf = PQnfields(res);
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		memset(&row, 0, sizeof(row));
		if (PQgetisnull(res, i, 1)) {
			snprintf(err, errlen, "postgresql: %s: an id is NULL",
			    what);
			goto out;
		}
		if (!PQgetisnull(res, i, 0))
			row.scope = PQgetvalue(res, i, 0);
		row.id = PQgetvalue(res, i, 1);
		row.id_len = (size_t)PQgetlength(res, i, 1);
		if (nf > 3 && !PQgetisnull(res, i, 3))
			row.reason = PQgetvalue(res, i, 3);
		if (nf > 2 && pg_time(res, i, 2, &row.revoked_at, &v) != 0) {
			snprintf(err, errlen, "postgresql: %s: revoked_at "
			    "\"%.40s\" is not a time", what, v);
			goto out;
		}
		if (fn(arg, &row, err, errlen) != 0)
			goto out;
	}
	rc = 0;
out:
	PQclear(res);
	return rc;
}

int
pgsrc_read_expired(struct pgsrc *p, int64_t after, int64_t through,
    pgsrc_row_fn fn, void *arg, char *err, size_t errlen)
{
	char a[24], b[24];
	const char *params[2] = { a, b };

	assert(p != NULL && fn != NULL);
	if (!(p->can & PGSRC_CAN_SWEEP)) {
		snprintf(err, errlen, "postgresql: the expiry sweep is not "
		    "prepared");
		return -1;
	}
	if (through <= after)
		return 0;
	snprintf(a, sizeof(a), "%" PRId64, after);
	snprintf(b, sizeof(b), "%" PRId64, through);
	return pg_rows(p, PG_ST_SWEEP, 2, params, "reading expired rows", fn,
	    arg, err, errlen);
}

long
pgsrc_key_match_text(const struct revkey *k, char *out, size_t cap)
{
	const unsigned char *b = k->id;
	size_t n = k->id_len, i, o = 0;
	static const char hx[] = "0123456789abcdef";

	if (!revkey_scope_is_x509(k->scope)) {
		if (n >= cap)
			return -1;
		memcpy(out, k->id, n);
		out[n] = '\0';
		return (long)n;
	}
	/* A negative serial's key is 0x00 before its magnitude. */
	if (n > 1 && b[0] == 0) {
		b++;
		n--;
	}
	for (i = 0; i < n; i++) {
		if (o + 2 >= cap)
			return -1;
		if (o > 0 || (b[i] >> 4) != 0)
			out[o++] = hx[b[i] >> 4];
		if (o > 0 || (b[i] & 0xf) != 0)
			out[o++] = hx[b[i] & 0xf];
	}
	out[o] = '\0';
	return (long)o;
}

/*
 * Appends s (len bytes) to a PostgreSQL array literal as a quoted element:
 * '"' and '\' escaped. 0, or -1 when memory runs out.
 */
static int
pg_array_add(unsigned char **buf, size_t *len, size_t *cap, const char *s,
    size_t n)
{
	size_t i, j;

	if (util_buf_append(buf, len, cap, *len > 1 ? ",\"" : "\"", *len > 1 ?
	    2 : 1, SIZE_MAX) != 0)
		return -1;
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && s[j] != '"' && s[j] != '\\'; j++)
			;
		if (util_buf_append(buf, len, cap, s + i, j - i,
		    SIZE_MAX) != 0)
			return -1;
		if (j < n && (util_buf_append(buf, len, cap, "\\", 1,
		    SIZE_MAX) != 0 || util_buf_append(buf, len, cap, s + j, 1,
		    SIZE_MAX) != 0))
			return -1;
		if (j < n)
			j++;
	}
	return util_buf_append(buf, len, cap, "\"", 1, SIZE_MAX);
}

/*
 * Runs statement name over the keys (serials or not, as x509 says), at
 * most PG_LIVE_BATCH per execution. 0, or -1 with err.
 */
static int
pg_live(struct pgsrc *p, const struct revkey *const *keys, size_t n,
    bool x509, const char *default_scope, int64_t at, pgsrc_row_fn fn,
    void *arg, char *err, size_t errlen)
{
	unsigned char *sa = NULL, *ia = NULL;
	size_t sl = 0, sc = 0, il = 0, ic = 0, i = 0, in_batch;
	char atbuf[24], text[2 * REVKEY_ID_MAX + 1];
	const char *params[4];
	long tl;
	int rc = -1;

	snprintf(atbuf, sizeof(atbuf), "%" PRId64, at);
	while (i < n) {
		sl = il = 0;
		if (util_buf_append(&sa, &sl, &sc, "{", 1, SIZE_MAX) != 0 ||
		    util_buf_append(&ia, &il, &ic, "{", 1, SIZE_MAX) != 0)
			goto oom;
		for (in_batch = 0; i < n && in_batch < PG_LIVE_BATCH; i++) {
			if (revkey_scope_is_x509(keys[i]->scope) != x509)
				continue;
			tl = pgsrc_key_match_text(keys[i], text, sizeof(text));
			if (tl < 0 || pg_array_add(&sa, &sl, &sc,
			    keys[i]->scope, keys[i]->scope_len) != 0 ||
			    pg_array_add(&ia, &il, &ic, text, (size_t)tl) != 0)
				goto oom;
			in_batch++;
		}
		if (in_batch == 0)
			break;
		if (util_buf_append(&sa, &sl, &sc, "}", 2, SIZE_MAX) != 0 ||
		    util_buf_append(&ia, &il, &ic, "}", 2, SIZE_MAX) != 0)
			goto oom;
		params[0] = (const char *)sa;
		params[1] = (const char *)ia;
		params[2] = atbuf;
		params[3] = default_scope;
		if (pg_rows(p, x509 ? PG_ST_LIVE_SER : PG_ST_LIVE, 4, params,
		    "rechecking removed keys", fn, arg, err, errlen) != 0)
			goto out;
	}
	rc = 0;
	goto out;
oom:
	snprintf(err, errlen, "postgresql: out of memory");
out:
	free(sa);
	free(ia);
	return rc;
}

int
pgsrc_read_live(struct pgsrc *p, const struct revkey *const *keys,
    size_t n, const char *default_scope, int64_t at, pgsrc_row_fn fn,
    void *arg, char *err, size_t errlen)
{
	assert(p != NULL && fn != NULL && default_scope != NULL);
	if (!(p->can & PGSRC_CAN_RECHECK)) {
		snprintf(err, errlen, "postgresql: the removal recheck is not "
		    "prepared");
		return -1;
	}
	if (n == 0)
		return 0;
	if (pg_live(p, keys, n, false, default_scope, at, fn, arg, err,
	    errlen) != 0)
		return -1;
	return pg_live(p, keys, n, true, default_scope, at, fn, arg, err,
	    errlen);
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

/* ---- standbys: how far behind the data may be --------------------------- */

enum pgsrc_standby_verdict
pgsrc_standby_judge(const struct pgsrc_standby *s, int64_t max_lag,
    int64_t *lag, char *why, size_t whylen)
{
	char dummy[1];
	int64_t l = -1;
	enum pgsrc_standby_verdict v;

	assert(s != NULL && lag != NULL);
	if (why == NULL) {
		why = dummy;
		whylen = sizeof(dummy);
	}
	why[0] = '\0';
	*lag = -1;
	if (!s->in_recovery) {
		*lag = 0;
		return PGSRC_SB_PRIMARY;
	}
	if (max_lag <= 0) {
		snprintf(why, whylen, "the server is a standby (in recovery): "
		    "its data may be behind the primary's by any time, and what "
		    "is signed from it would say it is current; read the "
		    "primary, or allow a standby with --standby-max-lag");
		return PGSRC_SB_NOT_ALLOWED;
	}
	if (!s->receiver) {
		snprintf(why, whylen, "no WAL receiver runs (replication is "
		    "not streaming: broken, or recovery from an archive)");
		return PGSRC_SB_UNKNOWN;
	}
	if (!s->visible) {
		snprintf(why, whylen, "pg_stat_wal_receiver's details are not "
		    "readable by this role: grant it pg_read_all_stats (or "
		    "pg_monitor)");
		return PGSRC_SB_NO_PRIVILEGE;
	}
	if (!s->streaming) {
		snprintf(why, whylen, "the WAL receiver is \"%.20s\", not "
		    "streaming", s->status);
		return PGSRC_SB_UNKNOWN;
	}
	if (!s->have_age || !s->have_end || !s->have_receive ||
	    !s->have_replay) {
		snprintf(why, whylen, "no message from the sender yet naming "
		    "its end of WAL");
		return PGSRC_SB_UNKNOWN;
	}
	if (s->age_ms < 0) {
		snprintf(why, whylen, "the last message from the sender arrived "
		    "%" PRId64 " ms in the standby's future (its clock went "
		    "back?)", -s->age_ms);
		return PGSRC_SB_UNKNOWN;
	}
	/* In whole seconds, rounded up, with the margin. */
	if (s->age_ms <= INT64_MAX - PGSRC_STANDBY_MARGIN_MS - 999)
		l = (s->age_ms + PGSRC_STANDBY_MARGIN_MS + 999) / 1000;
	else
		l = INT64_MAX / 1000;
	v = PGSRC_SB_BEHIND;
	if (s->paused)
		snprintf(why, whylen, "replay is paused "
		    "(pg_wal_replay_resume() resumes it)");
	else if (s->replay_lsn < s->receive_lsn)
		snprintf(why, whylen, "replay is behind what was received "
		    "(replayed %" PRIX64 "/%" PRIX64 ", received %" PRIX64
		    "/%" PRIX64 ")", s->replay_lsn >> 32,
		    s->replay_lsn & 0xffffffff, s->receive_lsn >> 32,
		    s->receive_lsn & 0xffffffff);
	else if (s->replay_lsn < s->end_lsn)
		snprintf(why, whylen, "replay is behind the sender's end of WAL "
		    "(replayed %" PRIX64 "/%" PRIX64 ", sender at %" PRIX64
		    "/%" PRIX64 ")", s->replay_lsn >> 32,
		    s->replay_lsn & 0xffffffff, s->end_lsn >> 32,
		    s->end_lsn & 0xffffffff);
	else if (l > max_lag) {
		snprintf(why, whylen, "the last message from the sender arrived "
		    "%" PRId64 " ms ago: the data may be %" PRId64 " s behind, "
		    "more than %" PRId64 " s (an idle sender answers every "
		    "wal_receiver_timeout / 2 of the standby)", s->age_ms, l,
		    max_lag);
		*lag = l;
	} else {
		v = PGSRC_SB_CURRENT;
		*lag = l;
	}
	/* Replay behind: how far is not known (*lag stays -1). */
	return v;
}

/* Reads an unsigned decimal column; false when NULL or not a number. */
static bool
pg_u64_col(const PGresult *res, int col, uint64_t *out)
{
	return !PQgetisnull(res, 0, col) &&
	    util_parse_u64(PQgetvalue(res, 0, col), UINT64_MAX, out) == 0;
}

int
pgsrc_standby_read(struct pgsrc *p, struct pgsrc_standby *s, char *err,
    size_t errlen)
{
	PGresult *res;
	const char *v;
	char *end;
	long long age;
	int rc = -1;

	assert(p != NULL && s != NULL);
	memset(s, 0, sizeof(*s));
	/*
	 * One statement: every value on the standby's clock and at one
	 * moment. pg_is_wal_replay_paused() fails outside recovery.
	 */
	res = PQexec(p->conn, "SELECT pg_is_in_recovery()::text, "
	    "(r.pid IS NOT NULL)::text, r.status, CASE WHEN "
	    "pg_is_in_recovery() THEN pg_is_wal_replay_paused()::text END, "
	    "(pg_last_wal_receive_lsn() - '0/0'::pg_lsn)::text, "
	    "(pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::text, "
	    "(r.latest_end_lsn - '0/0'::pg_lsn)::text, "
	    "floor(extract(epoch FROM clock_timestamp() - "
	    "r.last_msg_receipt_time) * 1000)::bigint::text "
	    "FROM (SELECT 1) AS one LEFT JOIN pg_stat_wal_receiver r ON true");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pg_err(p, res, "reading whether the server is a standby", err,
		    errlen);
		goto out;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 8 ||
	    PQgetisnull(res, 0, 0) || PQgetisnull(res, 0, 1)) {
		snprintf(err, errlen, "postgresql: reading whether the server "
		    "is a standby: an unexpected answer");
		goto out;
	}
	s->in_recovery = strcmp(PQgetvalue(res, 0, 0), "true") == 0;
	s->receiver = strcmp(PQgetvalue(res, 0, 1), "true") == 0;
	/* Without pg_read_all_stats every column but the pid is NULL. */
	s->visible = s->receiver && !PQgetisnull(res, 0, 2);
	if (s->visible) {
		v = PQgetvalue(res, 0, 2);
		snprintf(s->status, sizeof(s->status), "%s", v);
		s->streaming = strcmp(v, "streaming") == 0;
	}
	/* Unknown counts as paused. */
	s->paused = s->in_recovery && (PQgetisnull(res, 0, 3) ||
	    strcmp(PQgetvalue(res, 0, 3), "false") != 0);
	s->have_receive = pg_u64_col(res, 4, &s->receive_lsn);
	s->have_replay = pg_u64_col(res, 5, &s->replay_lsn);
	s->have_end = pg_u64_col(res, 6, &s->end_lsn);
	if (!PQgetisnull(res, 0, 7)) {
		v = PQgetvalue(res, 0, 7);
		errno = 0;
		age = strtoll(v, &end, 10);
		s->have_age = errno == 0 && end != v && *end == '\0';
		s->age_ms = s->have_age ? (int64_t)age : 0;
	}
	rc = 0;
out:
	PQclear(res);
	return rc;
}

int
pgsrc_check_standby(struct pgsrc *p, int64_t max_lag, int64_t *lag,
    bool *standby, char *err, size_t errlen)
{
	struct pgsrc_standby s;
	enum pgsrc_standby_verdict v;
	char why[512];

	assert(p != NULL && lag != NULL);
	*lag = -1;
	if (pgsrc_standby_read(p, &s, err, errlen) != 0)
		return -1;
	if (standby != NULL)
		*standby = s.in_recovery;
	v = pgsrc_standby_judge(&s, max_lag, lag, why, sizeof(why));
	if (v == PGSRC_SB_NOT_ALLOWED)
		snprintf(err, errlen, "postgresql: %s", why);
	else if (v != PGSRC_SB_PRIMARY && v != PGSRC_SB_CURRENT)
		snprintf(err, errlen, "postgresql: the standby is not shown to "
		    "be within --standby-max-lag %" PRId64 " s of its sender: "
		    "%s", max_lag, why);
	return (int)v;
}
