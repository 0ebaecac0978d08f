/* pgsrc.c - PostgreSQL as a revocation source: full snapshots, changes since a cursor, wake-ups */
/*
 * Every value from the server is untrusted text: it goes through the same
 * checks as a JSON list's (input_read_rows) and timestamps are parsed, not
 * trusted. One row never stops a read: what no check can name is left out
 * and counted, what can be named is represented (pgsrc_row_fix). The
 * cursor of incremental reads is a transaction horizon (xid8):
 * the changes of the transactions below the oldest one still running are
 * final, whatever order they committed in (config/postgresql-schema.sql).
 */
#include "pgsrc.h"
#include "pgsrc_int.h"

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

#include "log.h"
#include "util.h"

#define PGSRC_STR1(x)	#x
#define PGSRC_STR(x)	PGSRC_STR1(x)

/* Names of the statements pgsrc_prepare_rows() prepares. */
#define PG_ST_SWEEP	"revcheck_sweep"
#define PG_ST_LIVE	"revcheck_live"
#define PG_ST_LIVE_SER	"revcheck_live_serial"
/* Keys per execution of a recheck statement. */
#define PG_LIVE_BATCH	10000

/* Type OIDs (pg_type.dat): the key columns' types. */
#define PG_OID_NAME	19
#define PG_OID_TEXT	25
#define PG_OID_BPCHAR	1042
#define PG_OID_VARCHAR	1043

void
pgsrc_err(const struct pgsrc *p, const PGresult *res, const char *what,
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
		pgsrc_err(p, res, what, err, errlen);
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

/*
 * What the server says outside a query (a NOTICE, a FATAL before it closes
 * the connection) goes to the log, in its format, not raw to stderr.
 */
static void
pg_notice(void *arg, const char *msg)
{
	size_t n = strlen(msg);

	(void)arg;
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		n--;
	log_warn("postgresql: %.*s", (int)n, msg);
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
	if (p->conn != NULL)
		PQsetNoticeProcessor(p->conn, pg_notice, NULL);
	if (p->conn == NULL || PQstatus(p->conn) != CONNECTION_OK) {
		pgsrc_err(p, NULL, "cannot connect", err, errlen);
		goto fail;
	}
	/* Timestamps print as "YYYY-MM-DD HH:MM:SS[.f]+00" from here on. */
	if (pg_cmd(p, "SET TimeZone TO 'UTC'", "setting the time zone", err,
	    errlen) != 0 || pg_cmd(p, "SET DateStyle TO 'ISO, YMD'",
	    "setting the date style", err, errlen) != 0 ||
	    pg_cmd(p, "SET IntervalStyle TO 'postgres'",
	    "setting the interval style", err, errlen) != 0)
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

int
pgsrc_parse_time_lenient(const char *s, bool expiry, int64_t *out)
{
	size_t n = strlen(s);

	if (strcmp(s, "infinity") == 0) {
		*out = expiry ? 0 : PGSRC_TIME_MAX;
		return 1;
	}
	if (strcmp(s, "-infinity") == 0 || (n > 3 &&
	    strcmp(s + n - 3, " BC") == 0)) {
		*out = PGSRC_TIME_MIN;
		return 1;
	}
	if (pgsrc_parse_time(s, out) == 0) {
		if (*out < 0) {
			*out = PGSRC_TIME_MIN;
			return 1;
		}
		if (*out > PGSRC_TIME_MAX) {
			*out = expiry ? 0 : PGSRC_TIME_MAX;
			return 1;
		}
		if (expiry && *out == 0) {
			*out = PGSRC_TIME_MIN;	/* 0 would say "none" */
			return 1;
		}
		return 0;
	}
	/* A year of five digits or more, and anything else: the latest. */
	*out = expiry ? 0 : PGSRC_TIME_MAX;
	return 1;
}

/*
 * Rows quarantined or represented otherwise are logged once per process:
 * a re-base reads them again, and a follower re-bases every day. The
 * hashes of the rows logged, in an open-addressed set; once it is half
 * full, further rows are counted but not logged one by one.
 */
#define PG_LOGGED_SLOTS	8192
static uint64_t pg_logged[PG_LOGGED_SLOTS];
static size_t	pg_nlogged;

/* True the first time this (scope, id, why) is asked about. */
static bool
pg_log_first(const char *scope, const char *id, size_t id_len,
    const char *why)
{
	uint64_t h = UINT64_C(1469598103934665603);
	const char *parts[3] = { scope, id, why };
	size_t lens[3] = { strlen(scope), id_len, strlen(why) }, i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < lens[i]; j++) {
			h ^= (unsigned char)parts[i][j];
			h *= UINT64_C(1099511628211);
		}
		h ^= 0xff;
		h *= UINT64_C(1099511628211);
	}
	h |= 1;		/* 0 is an empty slot */
	for (i = (size_t)h % PG_LOGGED_SLOTS; pg_logged[i] != 0;
	    i = (i + 1) % PG_LOGGED_SLOTS)
		if (pg_logged[i] == h)
			return false;
	if (pg_nlogged >= PG_LOGGED_SLOTS / 2) {
		if (pg_nlogged++ == PG_LOGGED_SLOTS / 2)
			log_warn("postgresql: more rows left out or represented "
			    "otherwise: counted, no longer logged one by one");
		return false;
	}
	pg_logged[i] = h;
	pg_nlogged++;
	return true;
}

/* src[0..n) into out (cap bytes), cut, printable ASCII kept, else '?'. */
static void
pg_printable(char *out, size_t cap, const char *src, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 1 < cap; i++)
		out[o++] = (unsigned char)src[i] >= 0x20 &&
		    (unsigned char)src[i] < 0x7f ? src[i] : '?';
	out[o] = '\0';
}

/* Counts, samples and (once) logs a row no check can name. */
static void
pg_quarantine(struct pgsrc *p, const struct input_row *row,
    const char *scope, const char *why)
{
	struct pgsrc_qrow *q;
	char sc[72], id[72];

	pg_printable(sc, sizeof(sc), scope, strlen(scope));
	pg_printable(id, sizeof(id), row->id != NULL ? row->id : "",
	    row->id != NULL ? row->id_len : 0);
	p->q.rows++;
	if (p->q.nsample < PGSRC_QSAMPLE) {
		q = &p->q.sample[p->q.nsample++];
		memcpy(q->scope, sc, sizeof(q->scope));
		memcpy(q->id, id, sizeof(q->id));
		snprintf(q->why, sizeof(q->why), "%.*s",
		    (int)sizeof(q->why) - 1, why);
	}
	if (pg_log_first(scope, row->id != NULL ? row->id : "", row->id != NULL ?
	    row->id_len : 0, why))
		log_warn("postgresql: row of scope \"%s\", id \"%s\"%s left "
		    "out (quarantined: no check can name it): %s", sc, id,
		    row->id_len > 64 ? " (cut)" : "", why);
}

/* Logs (once) a row represented otherwise than it reads. */
static void
pg_represented(const struct input_row *row, const char *scope,
    const char *what)
{
	char sc[72], id[72];

	if (!pg_log_first(scope, row->id, row->id_len, what))
		return;
	pg_printable(sc, sizeof(sc), scope, strlen(scope));
	pg_printable(id, sizeof(id), row->id, row->id_len);
	log_warn("postgresql: row of scope \"%s\", id \"%s\": %s", sc, id,
	    what);
}

/* White space as a writer may leave it around or inside a serial. */
static bool
pg_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\v' || c == '\f';
}

/*
 * The serial id[0..len) as revkey_from_text() reads it, into out[cap]:
 * white space around it and colons or white space between its hex
 * digits left out, an optional '-' and 0x kept in front. 0, or -1 with
 * why when it is no serial (no hex digit, another character, too long).
 */
static int
pg_serial_norm(const char *id, size_t len, char *out, size_t cap,
    char *why, size_t whylen)
{
	size_t i = 0, o = 0, ndig = 0;

	while (len > 0 && pg_is_space(id[len - 1]))
		len--;
	while (i < len && pg_is_space(id[i]))
		i++;
	if (i < len && id[i] == '-')
		out[o++] = id[i++];
	while (i < len && pg_is_space(id[i]))
		i++;
	if (i + 1 < len && id[i] == '0' && (id[i + 1] == 'x' ||
	    id[i + 1] == 'X')) {
		i += 2;
	}
	for (; i < len; i++) {
		if (id[i] == ':' || pg_is_space(id[i]))
			continue;
		if (util_hexval((unsigned char)id[i]) < 0) {
			snprintf(why, whylen, "serial is not hex (a character "
			    "other than hex digits, ':' and white space)");
			return -1;
		}
		if (o + 1 >= cap) {
			snprintf(why, whylen, "serial has more than %d hex "
			    "digits", 2 * REVKEY_ID_MAX);
			return -1;
		}
		out[o++] = id[i];
		ndig++;
	}
	out[o] = '\0';
	if (ndig == 0) {
		snprintf(why, whylen, "serial has no hex digit");
		return -1;
	}
	return 0;
}

/* The reason into clean, cut, printable ASCII kept. 1 if it changed, else 0. */
static int
pg_reason_clean(const char *reason, char clean[TABLE_REASON_MAX])
{
	const unsigned char *u = (const unsigned char *)reason;
	size_t i, o, l;
	bool dirty = false;

	for (i = 0, o = 0; u[i] != '\0' && o + 1 < TABLE_REASON_MAX; i += l) {
		l = 1;
		if (u[i] >= 0x20 && u[i] < 0x7f) {
			clean[o++] = (char)u[i];
			continue;
		}
		dirty = true;
		if (u[i] >= 0x80 && (l = util_utf8_len(u + i,
		    strlen((const char *)u + i))) == 0)
			l = 1;
		clean[o++] = '?';
	}
	clean[o] = '\0';
	return dirty || u[i] != '\0';
}

int
pgsrc_row_fix(struct input_row *row, const char *default_scope,
    struct pgsrc_rowbuf *buf, char *why, size_t whylen)
{
	const char *scope = row->scope != NULL ? row->scope :
	    default_scope != NULL ? default_scope : REVKEY_DEFAULT_SCOPE;
	struct revkey k;
	char kerr[160];
	int fixed = 0;

	row->any_bytes = true;
	if (!revkey_scope_valid(scope, strnlen(scope, REVKEY_SCOPE_MAX + 1))) {
		snprintf(why, whylen, "invalid scope (1-%d printable ASCII "
		    "characters without spaces, or x509: and 64 lowercase hex "
		    "digits)", REVKEY_SCOPE_MAX);
		return -1;
	}
	if (revkey_from_text(&k, scope, row->id, row->id_len, kerr,
	    sizeof(kerr)) != 0) {
		/*
		 * A serial a certificate could still carry is represented
		 * as its digits: leaving it out could un-revoke it.
		 */
		if (!revkey_scope_is_x509(scope) || row->id_len == 0) {
			snprintf(why, whylen, "%s", kerr);
			return -1;
		}
		if (pg_serial_norm(row->id, row->id_len, buf->serial,
		    sizeof(buf->serial), why, whylen) != 0)
			return -1;
		if (revkey_from_text(&k, scope, buf->serial,
		    strlen(buf->serial), kerr, sizeof(kerr)) != 0) {
			snprintf(why, whylen, "%s", kerr);
			return -1;
		}
		row->id = buf->serial;
		row->id_len = strlen(buf->serial);
		fixed |= PGSRC_FIX_SERIAL;
	}
	if (row->reason != NULL && pg_reason_clean(row->reason,
	    buf->reason) != 0) {
		row->reason = buf->reason;
		fixed |= PGSRC_FIX_REASON;
	}
	return fixed;
}

const struct pgsrc_quarantine *
pgsrc_quarantined(const struct pgsrc *p)
{
	assert(p != NULL);
	return &p->q;
}

void
pgsrc_quarantine_clear(struct pgsrc *p)
{
	assert(p != NULL);
	memset(&p->q, 0, sizeof(p->q));
}

/* The snapshot horizon of the current transaction. 0, or -1 with err. */
static int
pg_horizon(struct pgsrc *p, uint64_t *out, char *err, size_t errlen)
{
	PGresult *res;
	int rc = -1;

	res = PQexec(p->conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pgsrc_err(p, res, "reading the snapshot horizon (PostgreSQL 13 or "
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
 * A row's time in column col of row i into *out (left as it is when
 * NULL), never refused (pgsrc_parse_time_lenient). Returns 1 when it
 * was represented otherwise than it reads, else 0.
 */
static int
pg_time_lenient(const PGresult *res, int i, int col, bool expiry,
    int64_t *out)
{
	if (col < 0 || PQgetisnull(res, i, col))
		return 0;
	return pgsrc_parse_time_lenient(PQgetvalue(res, i, col), expiry, out);
}

/*
 * A row read from the server (times already in it): 0 to use it, or -1
 * when it is quarantined (counted when count, and logged). A reason or
 * time represented otherwise is logged; times says which were.
 */
static int
pg_row_take(struct pgsrc *p, struct input_row *row, const char *def_scope,
    struct pgsrc_rowbuf *buf, bool count, const char *times)
{
	const char *scope = row->scope != NULL ? row->scope :
	    def_scope != NULL ? def_scope : REVKEY_DEFAULT_SCOPE;
	char why[160];
	int r;

	r = pgsrc_row_fix(row, def_scope, buf, why, sizeof(why));
	if (r < 0) {
		if (count)
			pg_quarantine(p, row, scope, why);
		return -1;
	}
	if (r & PGSRC_FIX_SERIAL)
		pg_represented(row, scope, "serial read as its hex digits "
		    "(white space and ':' left out): the revocation is kept");
	if (r & PGSRC_FIX_REASON)
		pg_represented(row, scope, "reason cleaned (cut to 63 "
		    "characters, non-ASCII made '?'): the revocation is kept");
	if (times != NULL)
		pg_represented(row, scope, times);
	return 0;
}

/* ---- full reads --------------------------------------------------------- */

/*
 * Checks that the key column col (pos, in the query's result res, "id"
 * or "scope") is text or varchar: other types print values other than the
 * ones the table compares or the change log holds. 0, or -1 with err.
 */
static int
pg_key_type(struct pgsrc *p, const PGresult *res, int pos, const char *col,
    char *err, size_t errlen)
{
	char oid[16], mod[16];
	const char *params[2], *why;
	PGresult *tr;
	Oid t;

	if (pos < 0)
		return 0;
	t = PQftype(res, pos);
	if (t == PG_OID_TEXT || t == PG_OID_VARCHAR)
		return 0;
	snprintf(oid, sizeof(oid), "%u", (unsigned)t);
	snprintf(mod, sizeof(mod), "%d", PQfmod(res, pos));
	params[0] = oid;
	params[1] = mod;
	tr = PQexecParams(p->conn, "SELECT format_type($1::oid, $2::int)", 2,
	    NULL, params, NULL, NULL, 0);
	if (t == PG_OID_BPCHAR)
		why = "its values are read padded with blanks to the column's "
		    "length ('tok-1     '), while checks and the change log "
		    "carry them trimmed, so a revoked id answers not_revoked";
	else if (t == PG_OID_NAME)
		why = "a value over 63 bytes is cut when written, so the id "
		    "revoked is not the one written";
	else
		why = "its text is not what the table compares (citext and "
		    "uuid are equal for other spellings: case, hyphens), and "
		    "revcheck matches an id byte for byte";
	snprintf(err, errlen, "postgresql: the query's column \"%s\" is "
	    "%.64s, not text or varchar: %s (make the table's column text or "
	    "varchar; build --query may return %s::text AS %s)", col,
	    PQresultStatus(tr) == PGRES_TUPLES_OK && PQntuples(tr) == 1 &&
	    PQnfields(tr) == 1 ? PQgetvalue(tr, 0, 0) : oid, why, col, col);
	PQclear(tr);
	return -1;
}

struct full_rd {
	struct pgsrc	*p;
	const struct input_opts *o;
	PGresult	*res;
	int		 row;		/* next row of res */
	bool		 done;		/* the cursor returned no rows */
	uint64_t	 seen;		/* rows fetched, for messages */
	int		 c_scope, c_id, c_at, c_reason, c_exp;
	struct pgsrc_rowbuf buf;	/* what a row represents otherwise */
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
	if (pg_key_type(f->p, f->res, f->c_id, "id", err, errlen) != 0 ||
	    pg_key_type(f->p, f->res, f->c_scope, "scope", err, errlen) != 0)
		return -1;
	return 0;
}

/* input_next_fn over FETCH batches of the cursor "revcheck_full". */
static int
full_next(void *arg, struct input_row *row, char *err, size_t errlen)
{
	struct full_rd *f = arg;
	int64_t exp;
	int r, lenient;

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
			pgsrc_err(f->p, f->res, "running the query", err, errlen);
			return -1;
		}
		if (f->seen == 0 && full_columns(f, err, errlen) != 0)
			return -1;
		if (PQntuples(f->res) == 0)
			f->done = true;
		f->seen += (uint64_t)PQntuples(f->res);
	}
	memset(row, 0, sizeof(*row));
	r = f->row++;
	/*
	 * Expired rows are no longer revocations: skipped, not checked. A
	 * time out of range is represented conservatively, never refused.
	 */
	exp = 0;
	lenient = pg_time_lenient(f->res, r, f->c_exp, true, &exp);
	if (exp != 0 && exp <= f->o->now - f->o->expiry_grace)
		goto next_row;
	if (!PQgetisnull(f->res, r, f->c_id)) {
		row->id = PQgetvalue(f->res, r, f->c_id);
		row->id_len = (size_t)PQgetlength(f->res, r, f->c_id);
	} else
		row->id = "";	/* no check names it: quarantined */
	if (f->c_scope >= 0 && !PQgetisnull(f->res, r, f->c_scope))
		row->scope = PQgetvalue(f->res, r, f->c_scope);
	if (f->c_reason >= 0 && !PQgetisnull(f->res, r, f->c_reason))
		row->reason = PQgetvalue(f->res, r, f->c_reason);
	lenient |= pg_time_lenient(f->res, r, f->c_at, false,
	    &row->revoked_at);
	if (pg_row_take(f->p, row, f->o->scope, &f->buf, true, lenient ?
	    "a revoked_at or expires_at out of range represented "
	    "conservatively (1970-01-01T00:00:01Z to 9999-12-31T23:59:59Z, "
	    "infinity: no expiry)" : NULL) != 0)
		goto next_row;
	return 1;
}

int
pgsrc_read_full(struct pgsrc *p, const char *query, struct input_set *s,
    const struct input_opts *o, uint64_t *cursor, char *err, size_t errlen)
{
	return pgsrc_read_full_issued(p, query, s, o, cursor, NULL, err,
	    errlen);
}

int
pgsrc_read_full_issued(struct pgsrc *p, const char *query,
    struct input_set *s, const struct input_opts *o, uint64_t *cursor,
    struct pgsrc_issued *issued, char *err, size_t errlen)
{
	struct input_opts ro;
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
	/*
	 * The database is the authority: a table without a row in force
	 * is the truth (every revocation expired or was deleted), not an
	 * input that lost its content. It covers the default scope.
	 */
	ro = *o;
	ro.allow_empty = true;
	pgsrc_quarantine_clear(p);
	memset(&f, 0, sizeof(f));
	f.p = p;
	f.o = &ro;
	if (pg_begin(p, err, errlen) != 0)
		goto out;
	/* The first statement takes the snapshot both reads share. */
	if (cursor != NULL && pg_horizon(p, cursor, err, errlen) != 0)
		goto out_end;
	/* The extended protocol runs exactly one statement: no "; COMMIT; ...". */
	res = PQexecParams(p->conn, sql, 0, NULL, NULL, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		pgsrc_err(p, res, "declaring the query's cursor", err, errlen);
		goto out_end;
	}
	if (input_read_rows(s, "postgresql", full_next, &f, &ro, err,
	    errlen) != 0)
		goto out_end;
	/* The issued set of exact scopes, in the same snapshot. */
	if (issued != NULL && pgsrc_issued_read(p, issued, err, errlen) != 0)
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
	struct pgsrc_rowbuf buf;
	const char *params[2] = { a, b }, *op;
	struct pgsrc_change c;
	PGresult *res = NULL;
	int i, n, lenient, rc = -1;

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
		pgsrc_err(p, res, "reading revcheck_changes", err, errlen);
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
		/*
		 * One change that cannot be represented never holds back
		 * the others: times are represented conservatively, a row
		 * no check can name is left out (an added one counted).
		 */
		lenient = pg_time_lenient(res, i, 4, false,
		    &c.row.revoked_at) | pg_time_lenient(res, i, 6, true,
		    &c.expires_at);
		if (pg_time_lenient(res, i, 7, false, &c.changed_at) != 0)
			c.changed_at = 0;
		if (pg_row_take(p, &c.row, NULL, &buf, !c.removed,
		    lenient && !c.removed ? "a revoked_at or expires_at out "
		    "of range represented conservatively (1970-01-01T00:00:01Z "
		    "to 9999-12-31T23:59:59Z, infinity: no expiry)" : NULL) != 0)
			continue;
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

/*
 * The trigger's columns of a row: tgenabled, tgtype, "no WHEN, no column
 * list, revcheck_changes_log()", the trigger's and its function's xmin,
 * the snapshot's xmax. All NULL when there is no trigger (a LEFT JOIN).
 */
#define PG_SQL_TRG_COLS \
	"t.tgenabled::text, t.tgtype::int::text, " \
	"t.tgqual IS NULL AND t.tgattr = ''::int2vector AND " \
	"f.proname = 'revcheck_changes_log', t.xmin::text, f.xmin::text, " \
	"pg_snapshot_xmax(pg_current_snapshot())::text"

/*
 * Checks the trigger of rel in columns c to c + 5 of row i (see
 * PG_SQL_TRG_COLS): present, enabled, logging every change. main: rel is
 * PGSRC_TABLE, which config/postgresql-schema.sql creates. Sets *changed
 * (never clears it) when the trigger or its function was written at or
 * above from. 0, or -1 with err.
 */
static int
pg_trigger_check(const PGresult *res, int i, int c, const char *rel,
    bool main, uint64_t from, bool *changed, char *err, size_t errlen)
{
	uint64_t next, txmin, fxmin;
	const char *en;
	long type;
	char *end;

	if (PQgetisnull(res, i, c) || PQgetisnull(res, i, c + 1)) {
		if (main)
			snprintf(err, errlen, "postgresql: " PGSRC_TABLE " has "
			    "no trigger " PGSRC_TRIGGER ": its changes would "
			    "reach no delta (apply config/postgresql-schema.sql)");
		else
			snprintf(err, errlen, "postgresql: the query reads %s, "
			    "which has no trigger " PGSRC_TRIGGER ": its changes "
			    "would reach no delta (CREATE TRIGGER " PGSRC_TRIGGER
			    " AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH "
			    "ROW EXECUTE FUNCTION revcheck_changes_log(), or "
			    "leave it out of --query)", rel, rel);
		return -1;
	}
	/*
	 * 'O' fires in a normal session, 'A' always; 'D' never, 'R' on
	 * replicas only. 'O' misses replica-role sessions: judged by
	 * pgsrc_check_replication().
	 */
	en = PQgetvalue(res, i, c);
	if (strcmp(en, "O") != 0 && strcmp(en, "A") != 0) {
		snprintf(err, errlen, "postgresql: the trigger " PGSRC_TRIGGER
		    " on %s is disabled (tgenabled '%.4s'): its changes would "
		    "reach no delta (ALTER TABLE %s ENABLE ALWAYS TRIGGER "
		    PGSRC_TRIGGER ")", rel, en, rel);
		return -1;
	}
	/* ROW, INSERT, DELETE, UPDATE; not BEFORE, not INSTEAD OF. */
	errno = 0;
	type = strtol(PQgetvalue(res, i, c + 1), &end, 10);
	if (errno != 0 || *end != '\0' || (type & 0x5f) != 0x1d ||
	    strcmp(PQgetvalue(res, i, c + 2), "t") != 0) {
		snprintf(err, errlen, "postgresql: the trigger " PGSRC_TRIGGER
		    " on %s does not log every insert, update and delete with "
		    "revcheck_changes_log() (AFTER, FOR EACH ROW, no WHEN, no "
		    "column list; %s)", rel, main ? "apply "
		    "config/postgresql-schema.sql again" : "create it as "
		    "config/postgresql-schema.sql does on " PGSRC_TABLE);
		return -1;
	}
	if (util_parse_u64(PQgetvalue(res, i, c + 3), UINT32_MAX, &txmin) != 0 ||
	    util_parse_u64(PQgetvalue(res, i, c + 4), UINT32_MAX, &fxmin) != 0 ||
	    util_parse_u64(PQgetvalue(res, i, c + 5), UINT64_MAX, &next) != 0) {
		snprintf(err, errlen, "postgresql: the trigger's transaction "
		    "ids are not unsigned integers");
		return -1;
	}
	if (changed != NULL && (pg_xid_full(next, txmin) >= from ||
	    pg_xid_full(next, fxmin) >= from))
		*changed = true;
	return 0;
}

int
pgsrc_check_trigger(struct pgsrc *p, uint64_t from, bool *changed,
    char *err, size_t errlen)
{
	PGresult *res;
	int rc = -1;

	assert(p != NULL);
	if (changed != NULL)
		*changed = false;
	res = PQexec(p->conn, "SELECT " PG_SQL_TRG_COLS " FROM pg_trigger t "
	    "JOIN pg_proc f ON f.oid = t.tgfoid WHERE t.tgrelid = "
	    "to_regclass('" PGSRC_TABLE "') AND t.tgname = '" PGSRC_TRIGGER "'");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pgsrc_err(p, res, "reading the trigger " PGSRC_TRIGGER, err, errlen);
		goto out;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 6) {
		snprintf(err, errlen, "postgresql: " PGSRC_TABLE " has no "
		    "trigger " PGSRC_TRIGGER ": its changes would reach no "
		    "delta (apply config/postgresql-schema.sql)");
		goto out;
	}
	rc = pg_trigger_check(res, 0, 0, PGSRC_TABLE, true, from, changed,
	    err, errlen);
out:
	PQclear(res);
	return rc;
}

/* The length of query without the ';' and blanks that end it. */
static size_t
pg_query_len(const char *query)
{
	size_t qlen = strlen(query);

	while (qlen > 0 && (query[qlen - 1] == ';' || query[qlen - 1] == ' ' ||
	    query[qlen - 1] == '\n' || query[qlen - 1] == '\t' ||
	    query[qlen - 1] == '\r'))
		qlen--;
	return qlen;
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
		pgsrc_err(p, res, what, err, errlen);
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
	qlen = pg_query_len(query);
	if (qlen > INT_MAX || pg_stmt_sql(&q, "%.*s", (int)qlen, query) != 0 ||
	    pg_stmt_sql(&probe, "SELECT * FROM (%s) q LIMIT 0", q) != 0) {
		snprintf(err, errlen, "postgresql: out of memory");
		goto out;
	}
	res = PQexecParams(p->conn, probe, 0, NULL, NULL, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pgsrc_err(p, res, "the query as a subquery", err, errlen);
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
 * calls fn for each row a check can name (pgsrc_row_fix; def_scope for a
 * row without a scope); the others were never published and are
 * skipped. 0, or -1 with err.
 */
static int
pg_rows(struct pgsrc *p, const char *name, int nparams,
    const char *const *params, const char *what, const char *def_scope,
    pgsrc_row_fn fn, void *arg, char *err, size_t errlen)
{
	struct pgsrc_rowbuf buf;
	char why[160];
	struct input_row row;
	PGresult *res;
	int i, n, nf, rc = -1;

	res = PQexecPrepared(p->conn, name, nparams, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		pgsrc_err(p, res, what, err, errlen);
		goto out;
	}
	nf = PQnfields(res);
	n = PQntuples(res);
	for (i = 0; i < n; i++) {
		memset(&row, 0, sizeof(row));
		/* A row no check can name was never published: skipped. */
		if (PQgetisnull(res, i, 1))
			continue;
		if (!PQgetisnull(res, i, 0))
			row.scope = PQgetvalue(res, i, 0);
		row.id = PQgetvalue(res, i, 1);
		row.id_len = (size_t)PQgetlength(res, i, 1);
		if (nf > 3 && !PQgetisnull(res, i, 3))
			row.reason = PQgetvalue(res, i, 3);
		if (nf > 2)
			(void)pg_time_lenient(res, i, 2, false,
			    &row.revoked_at);
		if (pgsrc_row_fix(&row, def_scope, &buf, why,
		    sizeof(why)) < 0)
			continue;
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
	return pg_rows(p, PG_ST_SWEEP, 2, params, "reading expired rows", NULL, fn,
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
		    "rechecking removed keys", default_scope, fn, arg, err,
		    errlen) != 0)
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
		pgsrc_err(p, NULL, "connection lost", err, errlen);
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
		pgsrc_err(p, NULL, "no socket", err, errlen);
		return -1;
	}
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : (snprintf(err, errlen,
		    "postgresql: poll: %s", strerror(errno)), -1);
	if (rc == 0)
		return 0;
	if (PQconsumeInput(p->conn) != 1) {
		pgsrc_err(p, NULL, "connection lost", err, errlen);
		return -1;
	}
	while ((nt = PQnotifies(p->conn)) != NULL) {
		PQfreemem(nt);
		got = 1;
	}
	return got;
}
