/* pgsrc_lag.c - whether what a PostgreSQL source shows is current: a standby's replay, a subscriber's apply, the change trigger's firing mode */
/*
 * What the server answered is judged here without libpq
 * (pgsrc_standby_judge(), pgsrc_repl_judge(), pgsrc_sub_judge()), so
 * the rules are tested on canned input.
 */
#include "pgsrc_lag.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgsrc.h"
#include "util.h"

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
