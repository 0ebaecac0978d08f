/* pgplan.h - follow's rules on a --query's plan and text, and on a standby's evidence: no server needed */
#ifndef REVCHECK_PGPLAN_H
#define REVCHECK_PGPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The pure half of the PostgreSQL source (pgsrc.h): what the server
 * answered (EXPLAIN output, SQL text, pg_stat_wal_receiver) is judged
 * here, without libpq, so the rules are tested on canned input.
 */

/* The trigger of config/postgresql-schema.sql that fills revcheck_changes. */
#define PGSRC_TABLE	"revcheck_revocations"
#define PGSRC_TRIGGER	"revcheck_changes_trg"

/*
 * What a --query reads, as pgsrc_check_query() finds it: the relations
 * the server's plan scans (views expanded) and the names the query text
 * and the plan's expressions use. Every string is NUL-terminated.
 */
#define PGSRC_PLAN_MAX		(4 << 20)	/* bytes of EXPLAIN output */
#define PGSRC_PLAN_DEPTH	64		/* nested plans */
#define PGSRC_PLAN_NODES	10000		/* plan nodes */
#define PGSRC_NAMES_MAX		8192		/* names of each kind */

struct pgsrc_names {
	char	**v;
	size_t	  n;
};

struct pgsrc_reads {
	struct pgsrc_names nsp;		/* the schema of relation i */
	struct pgsrc_names rel;		/* relation i, each (nsp, rel) once */
	struct pgsrc_names calls;	/* names followed by '(' (functions, aggregates) */
	struct pgsrc_names idents;	/* every identifier (views, among others) */
	struct pgsrc_names ops;		/* operators */
	/*
	 * What changes with time (or the session) alone without a function
	 * call: SQL value keywords as the server prints them
	 * ("CURRENT_TIMESTAMP", "USER", ...) and the words of string
	 * constants a date or time type reads as the current time, quoted
	 * ("'now'", "'today'", "'tomorrow'", "'yesterday'"). Only from
	 * expressions (SQL text, a plan's expressions), not from names.
	 */
	struct pgsrc_names clock;
	/* The type names of casts of a value that is not a constant ("x::T", "(...)::T"). */
	struct pgsrc_names casts;
};

/*
 * Walks the output of EXPLAIN (VERBOSE, FORMAT JSON) as hostile input (at
 * most PGSRC_PLAN_MAX bytes, PGSRC_PLAN_DEPTH levels, PGSRC_PLAN_NODES
 * nodes): adds to r every relation a node scans ("Relation Name" with its
 * "Schema"; each once) and the names of every expression string
 * (pgsrc_sql_names()). A node whose reads the plan does not show (a
 * Function Scan, Table Function Scan, Foreign Scan, Custom Scan, Named
 * Tuplestore Scan, any scan it does not know) is refused: -1 with err
 * naming it. Returns 0, or -1 with err.
 */
int pgsrc_plan_walk(const char *json, size_t len, struct pgsrc_reads *r,
    char *err, size_t errlen);

/*
 * Adds to r the names SQL text uses, as the server's lexer reads them:
 * identifiers (unquoted ones folded to lower case; a qualified name's
 * parts each), those followed by '(', and operators; nothing inside
 * string constants (standard, E'', U&'', dollar-quoted) or comments. To
 * r->clock: unquoted SQL value keywords (CURRENT_TIMESTAMP, CURRENT_DATE,
 * LOCALTIME, USER, ...) and string constants holding the word now, today,
 * tomorrow or yesterday (any case; E'' and U&'' escapes decoded). To
 * r->casts: the type after "::" when what is cast is not a constant (an
 * identifier, ')' or ']' before it), as written ("timestamp with time
 * zone", "character varying(10)[]"). Each name is kept once. Returns 0,
 * or -1 with err (out of memory, more than PGSRC_NAMES_MAX names).
 */
int pgsrc_sql_names(const char *sql, struct pgsrc_reads *r, char *err,
    size_t errlen);

/*
 * Follow's rule on what changes with time alone: refuses, with err naming
 * the first and saying what to do, when r->clock holds anything (a row
 * would enter or leave the result with no change logged). Function calls
 * and casts are judged by the server (pgsrc_check_query()). 0 or -1.
 */
int pgsrc_reads_clock(const struct pgsrc_reads *r, char *err, size_t errlen);

/* Frees what r holds and zeroes it. */
void pgsrc_reads_free(struct pgsrc_reads *r);

/*
 * The columns of a --query that a delta takes from the change log rather
 * than from the query: revcheck_changes_log() logs a written row's own
 * scope, id and revoked_at (a subject or session cutoff's time), so a
 * delta agrees with the base only when the query returns each of them
 * as that same column of the row, untransformed.
 */
enum { PGSRC_KEY_ID, PGSRC_KEY_SCOPE, PGSRC_KEY_AT, PGSRC_KEY_N };

/*
 * Checks, on the output of EXPLAIN (VERBOSE, FORMAT JSON) of a --query
 * (hostile input, as pgsrc_plan_walk() reads it), that each row the
 * query returns is one row of one scanned table, returned because of
 * that row's own columns, with its key columns untransformed. pos[k] is
 * the position in the query's result of the column named "id", "scope"
 * and "revoked_at" (-1: the query has none; id is required). Through
 * Append (UNION ALL, partitions), Sort, Unique, Aggregate (UNION,
 * DISTINCT, GROUP BY), Result, Materialize, Memoize and Gather nodes
 * down to every relation scan the column must be the plain column of
 * that name of the scanned table ("col" or "alias.col" in the Output
 * list). Refused, with err naming the column or the node and what to
 * do: an expression, a constant or another column in that place; a scan
 * whose Alias is in aliased (names followed by '(' in the query or the
 * views it reads: a column alias list can rename a table's columns, and
 * the plan shows the new names); a join, a subquery (SubPlan, InitPlan),
 * LIMIT, a window function, INTERSECT/EXCEPT, a CTE, VALUES or any other
 * node (a row's presence then depends on rows whose changes log other
 * keys). Returns 0, or -1 with err.
 */
int pgsrc_plan_keys(const char *json, size_t len, const int pos[PGSRC_KEY_N],
    const struct pgsrc_names *aliased, char *err, size_t errlen);

/* Adds every name of from to n. 0, or -1 with err. */
int pgsrc_names_merge(struct pgsrc_names *n, const struct pgsrc_names *from,
    char *err, size_t errlen);

/* The name of key column k ("id", "scope", "revoked_at"). */
const char *pgsrc_key_name(int k);

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

#endif
