/* pgsrc_lag.c - whether what a PostgreSQL source shows is current: a standby's replay, a subscriber's apply, the change trigger's firing mode */
/*
 * What the server answered is judged without libpq first
 * (pgsrc_standby_judge(), pgsrc_repl_judge(), pgsrc_sub_judge()), so
 * the rules are tested on canned input; then the pgsrc_check_*()
 * functions that ask the server, each in one statement.
 */
#include "pgsrc_lag.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "log.h"
#include "pgsrc.h"
#include "pgsrc_int.h"
#include "util.h"

/* ---- the rules: a standby, how far behind its data may be ------------- */

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

/* ---- logical replication ------------------------------------------------ */

enum pgsrc_repl_verdict
pgsrc_repl_judge(const struct pgsrc_repl_rel *v, size_t n, bool known,
    char *why, size_t whylen)
{
	const struct pgsrc_repl_rel *origin = NULL;
	size_t i, norigin = 0;

	if (whylen > 0)
		why[0] = '\0';
	for (i = 0; i < n; i++) {
		if (v[i].mode == 0 && v[i].subs != NULL) {
			snprintf(why, whylen, "revcheck_changes is replicated "
			    "into this database by subscription %.200s: its "
			    "rows carry the publisher's transaction ids, which "
			    "the follower's cursor (this server's) cannot "
			    "order, so changes could reach no delta; here the "
			    "trigger " PGSRC_TRIGGER " logs what the apply "
			    "worker writes (leave revcheck_changes out of the "
			    "publication, then ALTER SUBSCRIPTION ... REFRESH "
			    "PUBLICATION)", v[i].subs);
			return PGSRC_REPL_REFUSE;
		}
	}
	for (i = 0; i < n; i++) {
		if (v[i].mode == 0 || v[i].subs == NULL)
			continue;
		if (v[i].mode == 'O') {
			snprintf(why, whylen, "the trigger " PGSRC_TRIGGER
			    " on %.200s fires in the default mode (ORIGIN), "
			    "so not in the apply worker of subscription %.200s "
			    "that replicates into it: the rows it writes would "
			    "reach no delta (ALTER TABLE %.200s ENABLE ALWAYS "
			    "TRIGGER " PGSRC_TRIGGER ")", v[i].rel, v[i].subs,
			    v[i].rel);
			return PGSRC_REPL_REFUSE;
		}
		if (v[i].mode == 'A' && !v[i].path) {
			snprintf(why, whylen, "the function of the trigger "
			    PGSRC_TRIGGER " on %.200s sets no search_path: the "
			    "apply worker of subscription %.200s runs with an "
			    "empty one, so the trigger fails on the first row "
			    "it replicates and replication stops (apply "
			    "config/postgresql-schema.sql again: "
			    "revcheck_changes_log() SET search_path FROM "
			    "CURRENT)", v[i].rel, v[i].subs);
			return PGSRC_REPL_REFUSE;
		}
	}
	for (i = 0; i < n; i++)
		if (v[i].mode == 'O' && norigin++ == 0)
			origin = &v[i];
	if (origin == NULL)
		return PGSRC_REPL_OK;
	if (!known) {
		snprintf(why, whylen, "the trigger " PGSRC_TRIGGER " on %.200s "
		    "fires in the default mode (ORIGIN), not in a logical "
		    "replication apply worker, and this role cannot read "
		    "pg_subscription_rel and pg_subscription.subname to tell "
		    "whether a subscription replicates into it: its rows "
		    "could reach no delta (ALTER TABLE %.200s ENABLE ALWAYS "
		    "TRIGGER " PGSRC_TRIGGER ", or GRANT SELECT ON "
		    "pg_subscription_rel and SELECT (oid, subname) ON "
		    "pg_subscription to this role)", origin->rel, origin->rel);
		return PGSRC_REPL_REFUSE;
	}
	snprintf(why, whylen, "the trigger " PGSRC_TRIGGER " on %.200s%s fires "
	    "in the default mode (ORIGIN): a row written in a session with "
	    "session_replication_role = replica (a bulk load that sets it, "
	    "a superuser) reaches no delta, and answers not_revoked until "
	    "the next re-base (ALTER TABLE %.200s ENABLE ALWAYS TRIGGER "
	    PGSRC_TRIGGER ")", origin->rel, norigin > 1 ? " (and other "
	    "tables)" : "", origin->rel);
	return PGSRC_REPL_WARN;
}

/* ---- logical replication subscribers: how far behind the data may be ---- */

enum pgsrc_sub_verdict
pgsrc_sub_judge(const struct pgsrc_sub *v, size_t n, int64_t max_lag,
    int64_t *lag, char *why, size_t whylen)
{
	const struct pgsrc_sub *s;
	char dummy[1];
	int64_t l, worst = 0;
	size_t i;

	assert(lag != NULL && (v != NULL || n == 0));
	if (why == NULL) {
		why = dummy;
		whylen = sizeof(dummy);
	}
	why[0] = '\0';
	*lag = -1;
	if (n == 0) {
		*lag = 0;
		return PGSRC_SUB_NONE;
	}
	if (max_lag <= 0) {
		snprintf(why, whylen, "%.200s is replicated into this database "
		    "by subscription %.200s: its data may be behind the "
		    "publisher's by any time (a subscription disabled, an apply "
		    "worker failing on a conflict, a publisher out of reach), "
		    "and what is signed from it would say it is current; read "
		    "the publisher, or allow a subscriber with "
		    "--subscriber-max-lag", v[0].rel, v[0].name);
		return PGSRC_SUB_NOT_ALLOWED;
	}
	/* Every subscription must be shown current: the first that is not. */
	for (i = 0; i < n; i++) {
		s = &v[i];
		if (!s->enabled) {
			snprintf(why, whylen, "subscription %.200s is disabled "
			    "(ALTER SUBSCRIPTION %.200s ENABLE): %.200s holds "
			    "only what it applied before", s->name, s->name,
			    s->rel);
			return PGSRC_SUB_UNKNOWN;
		}
		if (s->unready != NULL) {
			snprintf(why, whylen, "subscription %.200s has not "
			    "synchronized %.200s yet (srsubstate '%c' in "
			    "pg_subscription_rel, not 'r')", s->name,
			    s->unready, s->unready_state != '\0' ?
			    s->unready_state : '?');
			return PGSRC_SUB_UNKNOWN;
		}
		if (!s->worker) {
			snprintf(why, whylen, "no apply worker runs for "
			    "subscription %.200s (it failed, a conflict or the "
			    "publisher out of reach: see the server's log; or "
			    "it is starting)", s->name);
			return PGSRC_SUB_UNKNOWN;
		}
		if (!s->have_age) {
			snprintf(why, whylen, "the apply worker of subscription "
			    "%.200s has no message from the publisher yet",
			    s->name);
			return PGSRC_SUB_UNKNOWN;
		}
		if (s->age_ms < 0) {
			snprintf(why, whylen, "the last message of subscription "
			    "%.200s arrived %" PRId64 " ms in the subscriber's "
			    "future (its clock went back?)", s->name, -s->age_ms);
			return PGSRC_SUB_UNKNOWN;
		}
		if (s->age_ms <= INT64_MAX - PGSRC_SUB_MARGIN_MS - 999)
			l = (s->age_ms + PGSRC_SUB_MARGIN_MS + 999) / 1000;
		else
			l = INT64_MAX / 1000;
		if (!s->keepalive) {
			/* What it received may not be applied: how far, unknown. */
			snprintf(why, whylen, "the last message of subscription "
			    "%.200s (%" PRId64 " ms ago) was data its apply "
			    "worker may still be applying, not a keepalive",
			    s->name, s->age_ms);
			return PGSRC_SUB_BEHIND;
		}
		if (l > max_lag) {
			snprintf(why, whylen, "the last message of subscription "
			    "%.200s arrived %" PRId64 " ms ago: %.200s may be %"
			    PRId64 " s behind, more than %" PRId64 " s (an idle "
			    "publisher is heard from every wal_receiver_timeout "
			    "/ 2 of the subscriber)", s->name, s->age_ms, s->rel,
			    l, max_lag);
			*lag = l;
			return PGSRC_SUB_BEHIND;
		}
		if (l > worst)
			worst = l;
	}
	*lag = worst;
	return PGSRC_SUB_CURRENT;
}

/* ---- asking the server: a standby ------------------------------------- */

/*
 * Runs sql (nf columns) into *res, which the caller clears in every case,
 * and returns n + 1 zeroed elements of size bytes for its *n rows (the
 * caller frees them), or NULL with err (what names the read).
 */
static void *
lag_rows(struct pgsrc *p, const char *sql, int nf, const char *what,
    size_t size, PGresult **res, int *n, char *err, size_t errlen)
{
	void *v;

	*res = PQexec(p->conn, sql);
	if (PQresultStatus(*res) != PGRES_TUPLES_OK || PQnfields(*res) != nf) {
		pgsrc_err(p, *res, what, err, errlen);
		return NULL;
	}
	*n = PQntuples(*res);
	if ((v = calloc((size_t)*n + 1, size)) == NULL)
		snprintf(err, errlen, "postgresql: out of memory");
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
		pgsrc_err(p, res, "reading whether the server is a standby", err,
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

/* ---- logical replication: the trigger's mode --------------------------- */

/*
 * Every table with the trigger calling revcheck_changes_log(), then
 * revcheck_changes: kind ('t', 'l'), name, tgenabled, whether the
 * function sets search_path, and the subscriptions of this database that
 * replicate into it (PG_SQL_SUBS, or NULL when they cannot be read).
 */
#define PG_SQL_SUBS(rel) \
	"(SELECT string_agg(quote_ident(s.subname::text), ', ' ORDER BY " \
	"s.subname) FROM pg_catalog.pg_subscription_rel r JOIN " \
	"pg_catalog.pg_subscription s ON s.oid = r.srsubid WHERE " \
	"r.srrelid = " rel ")"
#define PG_SQL_REPL(subs, logsubs) \
	"SELECT 't', t.tgrelid::regclass::text, t.tgenabled::text, " \
	"coalesce(EXISTS (SELECT 1 FROM unnest(f.proconfig) g WHERE " \
	"g LIKE 'search\\_path=%'), false), " subs " FROM pg_trigger t " \
	"JOIN pg_proc f ON f.oid = t.tgfoid WHERE t.tgname = '" \
	PGSRC_TRIGGER "' AND f.proname = 'revcheck_changes_log' " \
	"UNION ALL SELECT 'l', 'revcheck_changes', NULL, NULL, " logsubs \
	" ORDER BY 1 DESC, 2"
#define PG_SQL_REPL_PRIV \
	"SELECT has_table_privilege('pg_catalog.pg_subscription_rel', " \
	"'SELECT') AND has_column_privilege('pg_catalog.pg_subscription', " \
	"'oid', 'SELECT') AND has_column_privilege(" \
	"'pg_catalog.pg_subscription', 'subname', 'SELECT')"

int
pgsrc_check_replication(struct pgsrc *p, char *warn, size_t warnlen,
    char *err, size_t errlen)
{
	struct pgsrc_repl_rel *v = NULL;
	PGresult *res;
	char why[1024];
	bool known;
	int i, n, rc = -1;

	assert(p != NULL);
	if (warnlen > 0)
		warn[0] = '\0';
	res = PQexec(p->conn, PG_SQL_REPL_PRIV);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) != 1) {
		pgsrc_err(p, res, "reading the privileges on pg_subscription", err,
		    errlen);
		goto out;
	}
	known = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	if ((v = lag_rows(p, known ? PG_SQL_REPL(PG_SQL_SUBS("t.tgrelid"),
	    PG_SQL_SUBS("to_regclass('revcheck_changes')")) :
	    PG_SQL_REPL("NULL::text", "NULL::text"), 5, "reading the "
	    "subscriptions of the trigger's tables", sizeof(*v), &res, &n,
	    err, errlen)) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		v[i].rel = PQgetvalue(res, i, 1);
		v[i].mode = *PQgetvalue(res, i, 0) == 'l' ? 0 :
		    *PQgetvalue(res, i, 2);
		/* A mode of 0 would be taken for revcheck_changes. */
		if (*PQgetvalue(res, i, 0) != 'l' && v[i].mode == 0)
			v[i].mode = '?';
		v[i].path = strcmp(PQgetvalue(res, i, 3), "t") == 0;
		v[i].subs = PQgetisnull(res, i, 4) ? NULL :
		    PQgetvalue(res, i, 4);
	}
	switch (pgsrc_repl_judge(v, (size_t)n, known, why, sizeof(why))) {
	case PGSRC_REPL_OK:
		break;
	case PGSRC_REPL_WARN:
		snprintf(warn, warnlen, "postgresql: %s", why);
		break;
	default:
		snprintf(err, errlen, "postgresql: %s", why);
		goto out;
	}
	rc = 0;
out:
	PQclear(res);
	free(v);
	return rc;
}

/* ---- logical replication subscribers ---------------------------------- */

/*
 * Whether this role can read what pgsrc_check_subscriber() needs:
 * pg_subscription (oid, subdbid, subname, subenabled), pg_subscription_rel,
 * pg_stat_subscription.
 */
#define PG_SQL_SUB_PRIV \
	"SELECT has_column_privilege('pg_catalog.pg_subscription', 'oid', " \
	"'SELECT') AND has_column_privilege('pg_catalog.pg_subscription', " \
	"'subdbid', 'SELECT') AND has_column_privilege(" \
	"'pg_catalog.pg_subscription', 'subname', 'SELECT') AND " \
	"has_column_privilege('pg_catalog.pg_subscription', 'subenabled', " \
	"'SELECT'), has_table_privilege('pg_catalog.pg_subscription_rel', " \
	"'SELECT'), has_table_privilege('pg_catalog.pg_stat_subscription', " \
	"'SELECT'), (SELECT count(*) FROM pg_catalog.pg_subscription " \
	"WHERE subdbid = (SELECT oid FROM pg_catalog.pg_database WHERE " \
	"datname = current_database()))::text"
/*
 * The subscriptions of this database that feed a table the source reads,
 * one row each, in one statement on the subscriber's clock: name, a
 * table it feeds, one not ready and its state, enabled, an apply worker's
 * pid, its last message a keepalive naming all received, that message's
 * age in ms. The tables (PG_SQL_SUB_RELS): those with the trigger,
 * revcheck_revocations and revcheck_issued (an exact scope's cutoff is
 * dated back as the filter is); or every one (a build's --query).
 */
#define PG_SQL_SUB_RELS \
	"(r.srrelid = to_regclass('" PGSRC_TABLE "') OR " \
	"r.srrelid = to_regclass('" PGSRC_ISSUED_TABLE "') OR r.srrelid IN (" \
	"SELECT t.tgrelid FROM pg_catalog.pg_trigger t JOIN " \
	"pg_catalog.pg_proc f ON f.oid = t.tgfoid WHERE t.tgname = '" \
	PGSRC_TRIGGER "' AND f.proname = 'revcheck_changes_log'))"
#define PG_SQL_SUB(rels) \
	"SELECT quote_ident(s.subname::text), min(r.srrelid::regclass::text), " \
	"min(r.srrelid::regclass::text) FILTER (WHERE r.srsubstate <> 'r'), " \
	"min(r.srsubstate::text) FILTER (WHERE r.srsubstate <> 'r'), " \
	"s.subenabled::text, (w.pid IS NOT NULL)::text, " \
	"coalesce(w.last_msg_send_time = w.latest_end_time AND " \
	"w.received_lsn = w.latest_end_lsn, false)::text, " \
	"floor(extract(epoch FROM clock_timestamp() - " \
	"w.last_msg_receipt_time) * 1000)::bigint::text " \
	"FROM pg_catalog.pg_subscription_rel r JOIN " \
	"pg_catalog.pg_subscription s ON s.oid = r.srsubid LEFT JOIN " \
	"pg_catalog.pg_stat_subscription w ON w.subid = s.oid AND " \
	"w.relid IS NULL WHERE " rels " GROUP BY s.subname, s.subenabled, " \
	"w.pid, w.last_msg_send_time, w.latest_end_time, w.received_lsn, " \
	"w.latest_end_lsn, w.last_msg_receipt_time ORDER BY 1"

int
pgsrc_check_subscriber(struct pgsrc *p, int64_t max_lag, bool all,
    int64_t *lag, char *err, size_t errlen)
{
	struct pgsrc_sub *v = NULL;
	PGresult *res;
	const char *s;
	char why[1024], *end;
	long long age;
	int i, n, rc = -1;

	assert(p != NULL && lag != NULL);
	*lag = -1;
	res = PQexec(p->conn, PG_SQL_SUB_PRIV);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) != 4) {
		pgsrc_err(p, res, "reading the privileges on pg_subscription", err,
		    errlen);
		goto out;
	}
	/*
	 * Cannot tell whether a subscription feeds the tables: refused. With
	 * no subscription in this database, the rest need not be readable.
	 */
	if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
		snprintf(err, errlen, "postgresql: this role cannot read "
		    "pg_subscription (oid, subdbid, subname, subenabled) to tell "
		    "whether a logical replication subscription feeds the "
		    "tables it reads, whose data would then be behind the "
		    "publisher's by any time (GRANT SELECT (oid, subdbid, "
		    "subname, subenabled) ON pg_subscription to this role)");
		rc = PGSRC_SUB_NO_PRIVILEGE;
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 3), "0") == 0) {
		*lag = 0;
		rc = PGSRC_SUB_NONE;
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 1), "t") != 0 ||
	    strcmp(PQgetvalue(res, 0, 2), "t") != 0) {
		snprintf(err, errlen, "postgresql: this database has logical "
		    "replication subscriptions and this role cannot read %s to "
		    "tell whether one feeds the tables it reads, or how far "
		    "behind the publisher it is (GRANT SELECT ON %s to this "
		    "role)", strcmp(PQgetvalue(res, 0, 1), "t") != 0 ?
		    "pg_subscription_rel" : "pg_stat_subscription",
		    strcmp(PQgetvalue(res, 0, 1), "t") != 0 ?
		    "pg_subscription_rel" : "pg_stat_subscription");
		rc = PGSRC_SUB_NO_PRIVILEGE;
		goto out;
	}
	PQclear(res);
	if ((v = lag_rows(p, all ? PG_SQL_SUB("true") :
	    PG_SQL_SUB(PG_SQL_SUB_RELS), 8, "reading the subscriptions of "
	    "the source's tables", sizeof(*v), &res, &n, err,
	    errlen)) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		v[i].name = PQgetvalue(res, i, 0);
		v[i].rel = PQgetvalue(res, i, 1);
		v[i].unready = PQgetisnull(res, i, 2) ? NULL :
		    PQgetvalue(res, i, 2);
		v[i].unready_state = PQgetisnull(res, i, 3) ? '\0' :
		    *PQgetvalue(res, i, 3);
		v[i].enabled = strcmp(PQgetvalue(res, i, 4), "true") == 0;
		v[i].worker = strcmp(PQgetvalue(res, i, 5), "true") == 0;
		v[i].keepalive = strcmp(PQgetvalue(res, i, 6), "true") == 0;
		if (!PQgetisnull(res, i, 7)) {
			s = PQgetvalue(res, i, 7);
			errno = 0;
			age = strtoll(s, &end, 10);
			v[i].have_age = errno == 0 && end != s && *end == '\0';
			v[i].age_ms = v[i].have_age ? (int64_t)age : 0;
		}
	}
	rc = (int)pgsrc_sub_judge(v, (size_t)n, max_lag, lag, why,
	    sizeof(why));
	if (rc == PGSRC_SUB_NOT_ALLOWED)
		snprintf(err, errlen, "postgresql: %s", why);
	else if (rc != PGSRC_SUB_NONE && rc != PGSRC_SUB_CURRENT)
		snprintf(err, errlen, "postgresql: the subscriber is not shown "
		    "to be within --subscriber-max-lag %" PRId64 " s of its "
		    "publisher: %s", max_lag, why);
out:
	PQclear(res);
	free(v);
	return rc;
}
