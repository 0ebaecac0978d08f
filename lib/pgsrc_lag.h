/* pgsrc_lag.h - whether what a PostgreSQL source shows is current: a standby's replay, a subscriber's apply, the change trigger's firing mode */
#ifndef REVCHECK_PGSRC_LAG_H
#define REVCHECK_PGSRC_LAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The pgsrc_*_judge() functions decide from what the server showed,
 * without libpq, so the rules are tested on canned input; the
 * pgsrc_check_*() functions ask the server and call them.
 */

struct pgsrc;	/* pgsrc.h: one connection */

/*
 * A standby (a server in recovery) shows the primary's data as of the WAL
 * it has replayed, which may be behind by any time. What it shows of that,
 * read by pgsrc_standby_read() in one statement on the standby's clock.
 */
struct pgsrc_standby {
	bool		 in_recovery;	/* pg_is_in_recovery() */
	bool		 receiver;	/* a WAL receiver runs (a row in pg_stat_wal_receiver) */
	bool		 visible;	/* its details are readable by this role */
	bool		 streaming;	/* its status is "streaming" */
	bool		 paused;	/* replay paused, or a pause requested */
	bool		 have_receive, have_replay, have_end, have_age;
	char		 status[24];	/* the receiver's status, for messages */
	uint64_t	 receive_lsn;	/* pg_last_wal_receive_lsn(): received, flushed */
	uint64_t	 replay_lsn;	/* pg_last_wal_replay_lsn() */
	uint64_t	 end_lsn;	/* latest_end_lsn: the sender's end of WAL in its last message */
	int64_t		 age_ms;	/* clock_timestamp() - last_msg_receipt_time */
};

/*
 * The evidence is taken up to this much later than it is: a keepalive may
 * name the sender's position a few milliseconds before a commit it has not
 * yet sent (see docs/SECURITY.md, "Reading a standby").
 */
#define PGSRC_STANDBY_MARGIN_MS	1000

enum pgsrc_standby_verdict {
	PGSRC_SB_PRIMARY = 0,	/* not in recovery: current by definition */
	PGSRC_SB_CURRENT,	/* a standby shown at most *lag s behind, within the bound */
	PGSRC_SB_NOT_ALLOWED,	/* a standby, and no bound allows one */
	PGSRC_SB_NO_PRIVILEGE,	/* pg_stat_wal_receiver's details not readable */
	PGSRC_SB_UNKNOWN,	/* not streaming, no evidence yet, a clock gone back */
	PGSRC_SB_BEHIND,	/* shown, or may be, more than the bound behind */
};

/*
 * Decides from s whether data read on that server may be published as
 * current: a primary always; a standby only when max_lag > 0 (seconds;
 * 0: no standby allowed) and it is shown to be at most max_lag seconds
 * behind its sender. Shown means: the WAL receiver is streaming, replay is
 * not paused, everything received has been replayed and so has the
 * sender's end of WAL as its last message named it, and that message
 * arrived age_ms ago. Then every transaction the sender had flushed
 * PGSRC_STANDBY_MARGIN_MS before that message is in a snapshot taken after
 * s was read, and *lag = ceil((age_ms + margin) / 1000) seconds is how far
 * the data may be behind. *lag is set for PRIMARY (0), CURRENT and for a
 * BEHIND by the message's age alone (else -1: replay behind, or nothing
 * shown). why (when not NULL) gets the reason of any other verdict. Needs
 * no server.
 */
enum pgsrc_standby_verdict pgsrc_standby_judge(const struct pgsrc_standby *s,
    int64_t max_lag, int64_t *lag, char *why, size_t whylen);

/*
 * Logical replication and the trigger's firing mode. A trigger in the
 * default mode (tgenabled 'O', ORIGIN) does not fire in a session with
 * session_replication_role = replica: a logical replication apply
 * worker, a bulk load that sets it, any superuser who does. What such a
 * session writes is in no change. One relation as pgsrc_check_replication()
 * reads it: every table with PGSRC_TRIGGER calling revcheck_changes_log()
 * (whether a --query reads it or not), then revcheck_changes itself.
 */
struct pgsrc_repl_rel {
	const char	*rel;		/* its name, as regclass prints it */
	char		 mode;		/* tgenabled; 0 for revcheck_changes */
	bool		 path;		/* revcheck_changes_log() sets search_path */
	const char	*subs;		/* subscriptions of this database that
					   replicate into it ("a, b"); NULL: none */
};

enum pgsrc_repl_verdict {
	PGSRC_REPL_OK = 0,	/* every trigger fires in every session */
	PGSRC_REPL_WARN,	/* a trigger in the default mode, no subscription
				   writes its table: accepted, with a warning */
	PGSRC_REPL_REFUSE,	/* rows written would reach no delta, or the
				   log would hold rows of another server */
};

/*
 * Decides from what was read (known: false when this role cannot read
 * pg_subscription_rel and pg_subscription.subname, every subs NULL then):
 *   - revcheck_changes replicated into this database by a subscription:
 *     refused (its rows carry the publisher's transaction ids, which the
 *     cursor, this server's transaction horizon, cannot order, and its
 *     seq numbers, which collide with this server's and stop the apply);
 *   - a table with the trigger in the default mode that a subscription
 *     replicates into: refused (the apply worker's rows are in no change);
 *   - such a table with an ALWAYS trigger whose function sets no
 *     search_path: refused (the apply worker runs with an empty one: the
 *     trigger fails and replication stops);
 *   - a trigger in the default mode when it cannot be known whether a
 *     subscription replicates into its table: refused, naming the
 *     privilege (with ALWAYS triggers it does not matter);
 *   - a trigger in the default mode otherwise: WARN (a replica-role
 *     session's rows are in no change; nothing on the server shows one).
 * why gets the reason of every verdict but OK: it names the table, the
 * subscription and the statement to run. Needs no server.
 */
enum pgsrc_repl_verdict pgsrc_repl_judge(const struct pgsrc_repl_rel *v,
    size_t n, bool known, char *why, size_t whylen);

/*
 * A logical replication subscriber: a table the source reads that a
 * subscription of this database replicates into holds what its apply
 * worker has applied, which may be behind the publisher by any time. One
 * subscription as pgsrc_sub_read() reads it, in one statement on the
 * subscriber's clock (pg_stat_subscription, the apply worker's row).
 */
struct pgsrc_sub {
	const char	*name;		/* the subscription, quoted as an identifier */
	const char	*rel;		/* a table the source reads that it feeds */
	const char	*unready;	/* such a table not yet synchronized
					   (srsubstate not 'r'); NULL: none */
	char		 unready_state;	/* its srsubstate */
	bool		 enabled;	/* pg_subscription.subenabled */
	bool		 worker;	/* an apply worker runs (pid not NULL) */
	bool		 keepalive;	/* its last message was a keepalive
					   (last_msg_send_time = latest_end_time)
					   naming all it received (received_lsn
					   = latest_end_lsn) */
	bool		 have_age;
	int64_t		 age_ms;	/* clock_timestamp() - last_msg_receipt_time */
};

/* The evidence is taken this much later than it is (as for a standby). */
#define PGSRC_SUB_MARGIN_MS	PGSRC_STANDBY_MARGIN_MS

enum pgsrc_sub_verdict {
	PGSRC_SUB_NONE = 0,	/* no subscription feeds a table the source reads */
	PGSRC_SUB_CURRENT,	/* every one shown at most *lag s behind, within the bound */
	PGSRC_SUB_NOT_ALLOWED,	/* one does, and no bound allows it */
	PGSRC_SUB_NO_PRIVILEGE,	/* the catalogs or statistics not readable */
	PGSRC_SUB_UNKNOWN,	/* disabled, no worker, a table syncing, nothing heard */
	PGSRC_SUB_BEHIND,	/* shown, or may be, more than the bound behind */
};

/*
 * Decides from the n subscriptions that feed a table the source reads
 * whether what it reads may be published as current: with none, always
 * (NONE, *lag 0); else only when max_lag > 0 (seconds; 0: refused) and
 * each is enabled, every table it feeds is ready ('r'), its apply worker
 * runs, its last message was a keepalive naming everything it received
 * (the worker applies messages in order, one at a time: what came before
 * the keepalive is committed here) and arrived age_ms ago. *lag is then
 * the largest ceil((age_ms + margin) / 1000) seconds (CURRENT, or BEHIND by
 * the age alone; else -1). What this shows and what it cannot (the
 * publisher's WAL sender decoding behind its WAL): docs/SECURITY.md,
 * "Reading a logical replication subscriber". why (when not NULL) gets
 * the reason of every verdict but NONE and CURRENT, naming the
 * subscription and the table. Needs no server.
 */
enum pgsrc_sub_verdict pgsrc_sub_judge(const struct pgsrc_sub *v, size_t n,
    int64_t max_lag, int64_t *lag, char *why, size_t whylen);

/*
 * Reads s on p, in one statement outside any transaction (the caller's
 * snapshot must be taken after it: replay only moves forward, so such a
 * snapshot holds at least what s shows). 0, or -1 with err.
 */
int pgsrc_standby_read(struct pgsrc *p, struct pgsrc_standby *s, char *err,
    size_t errlen);

/*
 * pgsrc_standby_read() and pgsrc_standby_judge(): returns the verdict
 * (*lag as there; *standby, when not NULL, whether the server is in
 * recovery), with err saying why for every verdict but PRIMARY and
 * CURRENT; -1 with err when the server could not be asked.
 */
int pgsrc_check_standby(struct pgsrc *p, int64_t max_lag, int64_t *lag,
    bool *standby, char *err, size_t errlen);

/*
 * Reads the relations of pgsrc_repl_rel from the catalogs (inside the
 * round's snapshot or not) and judges them: 0 with warn set to the
 * warning of a WARN ("" for OK), or -1 with err (a REFUSE, or the read
 * failed).
 */
int pgsrc_check_replication(struct pgsrc *p, char *warn, size_t warnlen,
    char *err, size_t errlen);

/*
 * Reads the subscriptions that feed a table the source reads (every
 * table with PGSRC_TRIGGER calling revcheck_changes_log(), and
 * revcheck_revocations; with all, every table a subscription of this
 * database replicates into: a build's --query may read any) and judges
 * them, in statements outside any transaction: the caller's snapshot must
 * be taken after it (what an apply worker committed stays committed).
 * Returns the verdict, with err saying why for every one but NONE and
 * CURRENT; -1 with err when the server could not be asked.
 */
int pgsrc_check_subscriber(struct pgsrc *p, int64_t max_lag, bool all,
    int64_t *lag, char *err, size_t errlen);

#endif
