/* loader.h - loads, verifies and installs filters; rollback state; audit log */
#ifndef REVCHECK_SVC_LOADER_H
#define REVCHECK_SVC_LOADER_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "config.h"
#include "sbuf.h"
#include "delta.h"
#include "sign.h"
#include "snapshot.h"
#include "stale.h"

#define LOADER_MAX_SIGNERS	64
#define LOADER_STATE_NAME	"rollback.json"
#define LOADER_AUDIT_NAME	"audit.log"

/* One accepted or refused load, as written to the audit log. */
struct loader_event {
	int64_t		 time;		/* 0: no load attempted yet */
	uint64_t	 version;	/* 0 when unknown */
	char		 signer[65];	/* hex key id, "" when unknown */
	char		 sha256[65];	/* of the filter file, "" when unknown */
	bool		 accepted;
	char		 reason[256];	/* why refused; "" when accepted */
	char		 source[PATH_MAX];
};

/*
 * Highest accepted version per signer, persisted in the state dir, and
 * how far the delta chain of that exact base was served: a restart that
 * finds fewer deltas (files lost, an edge whose origin is down) must not
 * answer from the base alone, which lacks revocations it once served.
 */
struct loader_hwm {
	unsigned char	 signer[SIGN_KEYID_LEN];
	uint64_t	 version;
	unsigned char	 sha256[32];
	uint64_t	 delta_seq;	/* highest delta seq served on sha256 */
};

/*
 * The pair in service is not what the disk has: its files gone or
 * changed, or current naming a pair that was refused (an older version
 * put back, say). It is served on from memory, where it was verified.
 */
struct loader_disk {
	bool		 mismatch;
	int64_t		 since;
	uint64_t	 served_version;
	char		 served_sha256[65];
	char		 found[512];	/* what the disk has, and why refused */
};

struct loader {
	char		 filter_dir[PATH_MAX];	/* "" on an edge */
	char		 state_path[PATH_MAX];
	char		 audit_path[PATH_MAX];
	int		 audit_fd;
	bool		 edge;		/* no table: positives need the authority */
	bool		 owner_set;	/* filter_owner configured */
	uid_t		 owner_uid;	/* it, besides root and the daemon */
	struct sign_ring ring;
	/* The staleness policy: set by SIGHUP, read by the sync thread. */
	_Atomic int64_t	 pol_max_age;
	_Atomic int64_t	 pol_clock_skew;
	_Atomic int64_t	 pol_max_lag;
	struct loader_hwm hwm[LOADER_MAX_SIGNERS];
	size_t		 nhwm;
	/* What the last poll looked at, to skip unchanged directories. */
	char		 last_target[PATH_MAX];
	struct stat	 last_st;
	int		 last_pub_err;	/* log "no current pair" once */
	pthread_mutex_t	 load_mu;	/* one load at a time */
	pthread_mutex_t	 ev_mu;		/* guards last, accepted, rejected */
	struct loader_event last;
	uint64_t	 accepted;
	uint64_t	 rejected;
	/* The files the snapshot in service was loaded from ("" on an edge). */
	char		 serving_filter[PATH_MAX];
	char		 serving_table[PATH_MAX];
	/* The last delta chain refusal, logged once until it changes. */
	char		 chain_err[512];
	/* What the last chain poll saw, to skip unchanged chains cheaply. */
	struct stat	 chain_head_st;
	struct stat	 chain_next_st;
	uint64_t	 chain_seq;
	uint64_t	 chain_base;
	char		 chain_dir[PATH_MAX];	/* the origin's chain in service */
	struct loader_disk disk;	/* guarded by ev_mu */
	uint64_t	 chain_max;	/* delta_memory_max: one chain's files */
};

/*
 * Sets up a loader from the configuration: loads the trusted keys, reads
 * the rollback state (a missing file is an empty state; a corrupt one is
 * an error, never silently reset), opens the audit log for appending.
 * Returns 0, or -1 with err naming the key or file; l is then freed.
 */
int loader_init(struct loader *l, const struct config *c,
    const struct stale_policy *p, char *err, size_t errlen);

void loader_free(struct loader *l);

/*
 * Looks at FILTER_DIR/current and, when it names a pair other than the
 * last one looked at (or force), loads it with loader_load_files().
 * Returns 1 when there was nothing new, 0 when a filter was installed,
 * -1 when the pair was refused (logged, audited, counted; the previous
 * filter keeps serving).
 */
int loader_poll(struct loader *l, struct snapshot_slot *sl, bool force);

/*
 * Opens and installs a filter file and its table (table_path NULL on an
 * edge). Same results as loader_poll, with 1 meaning "this exact filter
 * is already installed".
 */
int loader_load_files(struct loader *l, struct snapshot_slot *sl,
    const char *filter_path, const char *table_path);

/*
 * The single acceptance path, for local loads and edge syncs alike: takes
 * ownership of ff and tab (tab may be NULL only on an edge); checks the
 * signature against the ring, the table binding, freshness, and the
 * rollback rules (a version below the highest accepted, or the highest
 * version with other bytes, is refused); persists the new high-water mark
 * before swapping the snapshot in. Writes one audit line either way. A
 * base on which the state records deltas served gets that seq as its
 * chain_need: it answers 503 chain_behind until the chain catches up.
 * Returns 0 installed, 1 already installed (nothing written), -1 refused.
 */
int loader_accept(struct loader *l, struct snapshot_slot *sl,
    struct ffile *ff, struct table *tab, const char *source);

/*
 * Would loader_accept() take ff, whose signature and table were checked,
 * at now? Its freshness and rollback rules, without side effects (an
 * edge asks before its download may replace the persisted file). While
 * sl serves nothing fresh, a base too old or expired on its own is taken
 * (its chain may make it fresh; checks judge staleness per request).
 * Returns true, or false with why.
 */
bool loader_admissible(struct loader *l, struct snapshot_slot *sl,
    const struct ffile *ff, int64_t now, char *why, size_t whylen);

/*
 * ev as the JSON object of an audit line and of /v1/status reloads.last
 * (docs/API.md), or a JSON null when no load was attempted yet; NULL when
 * out of memory. The caller owns it.
 */
cJSON *loader_event_json(const struct loader_event *ev);

/*
 * Records a refusal that happened before a filter could be parsed (for
 * example a download or open failure): one audit line, one count.
 */
void loader_refuse(struct loader *l, uint64_t version, const char *source,
    const char *reason);

/*
 * Applies the delta chain beside the base in service (its delta/
 * directory, from filterbuild follow), for a local load. Each new delta
 * must parse, verify against the trusted keys and link to what is in
 * service (lib/delta.h: never a gap, fork, replay or other base); the
 * overlay in service is cloned, the deltas applied to the clone, and a
 * snapshot sharing the base is swapped in, with the freshness of the
 * newest delta or head. A file that fails stops the chain where it is
 * (logged and counted once per distinct error): the snapshot in service
 * keeps answering until the staleness rules refuse it. Returns 0 when
 * something new was installed, 1 when nothing was new, -1 on a refusal.
 */
int loader_poll_chain(struct loader *l, struct snapshot_slot *sl);

/*
 * The rule of loader_poll_chain over any source of chain files (an
 * edge's download of /v1/delta): applies what verifies and links, then
 * the head. where names the source in messages. Same results. The
 * highest delta seq applied is persisted in the rollback state before
 * the snapshot holding it is swapped in (a state that cannot be written
 * refuses the chain), and the signers of the deltas and head applied are
 * recorded in the snapshot for loader_set_keys.
 */
int loader_apply_chain(struct loader *l, struct snapshot_slot *sl,
    delta_src_fn src, void *src_arg, const char *where);

/*
 * Re-verifies what is in service (SIGHUP): hashes the filter and table
 * bytes in memory again against the SHA-256s they were verified with and,
 * for a local load, hashes the pair's files on disk too. When anything
 * differs (a file edited after verification, a bit flipped in memory) it
 * logs an error, writes an audit line, and empties the slot: checks answer
 * 503 no_filter until a pair verifies again (fail closed; the files in
 * place are then refused by their table binding). Returns 0 when all
 * matched or nothing is loaded, -1 when the snapshot was taken out of
 * service.
 */
int loader_reverify(struct loader *l, struct snapshot_slot *sl);

/*
 * The staleness policy a filter must meet to be loaded: set at init and
 * by SIGHUP (loader_set_policy, any thread), read by loader_policy.
 */
void loader_set_policy(struct loader *l, const struct stale_policy *p);
void loader_policy(const struct loader *l, struct stale_policy *p);

/*
 * Reopens the audit log (after logrotate moved it; called on SIGHUP).
 * Returns 0, or -1 and keeps writing to the old file.
 */
int loader_reopen_audit(struct loader *l);

/*
 * Replaces the trusted keys with c's (SIGHUP): every key loads or nothing
 * changes. A filter in service whose signer, or the signer of a delta or
 * head applied to it, is no longer trusted leaves service at once
 * (logged; the node answers no_filter until a filter by a trusted key
 * loads, then chain_behind until deltas by trusted keys reach the seq
 * once served): removing a key withdraws trust, it does not wait.
 * Returns 0, or -1 with err naming the key file; the old keys stay.
 */
int loader_set_keys(struct loader *l, struct snapshot_slot *sl,
    const struct config *c, char *err, size_t errlen);

/*
 * Reads a file the configuration names and the daemon trusts (a trusted
 * key, a JWKS file, an HS or introspection client secret): a regular file
 * only (opened without blocking, so a FIFO cannot hang the daemon), owned
 * by root, the daemon's uid or c's filter_owner, and writable by neither
 * group nor others, all checked with fstat on the descriptor that was
 * read. Returns 0 with *out (NUL-terminated; the caller frees it), or -1
 * with err naming the file and what was wrong.
 */
int loader_read_trusted(const struct config *c, const char *path,
    size_t max, unsigned char **out, size_t *len, char *err, size_t errlen);

/*
 * Loads c's trusted key files into r (initialised by the caller), each
 * read with its fstat: owned by root, the daemon's uid or c's
 * filter_owner, and writable by neither group nor others, checked on the
 * descriptor that was read. Returns 0, or -1 with err naming the file;
 * r then holds the keys loaded so far (the caller frees it).
 */
int loader_load_ring(struct sign_ring *r, const struct config *c,
    char *err, size_t errlen);

/*
 * Checks ff's signature against the trusted keys in force (safe against a
 * concurrent loader_set_keys). Returns 0, or -1 with err.
 */
int loader_verify(struct loader *l, const struct ffile *ff, char *err,
    size_t errlen);

/*
 * The filter in service is not on disk (found says what is there): it
 * keeps serving, from memory, the bytes that were verified, and this
 * says so - an error log line and an audit line ("event":
 * "disk_mismatch") when found changes, /v1/status "disk_mismatch" and
 * the metric revcheckd_served_not_on_disk until loader_disk_clear. Does
 * nothing when no filter is in service. Any thread; can't fail.
 */
void loader_disk_flag(struct loader *l, struct snapshot_slot *sl,
    const char *found);

/* The pair on disk is the one in service again (logged once). */
void loader_disk_clear(struct loader *l);

/* A copy of the state; true when the pair in service is not on disk. */
bool loader_disk_state(struct loader *l, struct loader_disk *out);

/*
 * /v1/status "disk_mismatch": null, or {"since", "served_version",
 * "served_sha256", "found"}; NULL when out of memory. The caller owns it.
 */
cJSON *loader_disk_json(struct loader *l);

/* A consistent copy of the last event and the counters. */
void loader_stats(struct loader *l, struct loader_event *last,
    uint64_t *accepted, uint64_t *rejected);

/* The highest version accepted from any signer (0: none yet). */
uint64_t loader_highest(struct loader *l);

/*
 * Lowers the calling thread's priority by the config's loader_nice (none
 * at 0): called by the thread that reads, hashes and verifies new filters
 * (who: "main" or "sync") once the HTTP workers exist, so that a reload
 * takes the CPU they leave rather than delay their answers. The thread
 * also gives way (util_give_way) every LOADER_GIVE_WAY bytes it hashes,
 * validates or faults in: a nice value alone lets a running loader keep its CPU for a
 * whole time slice (4-10 ms seen on two cores under EEVDF) while a woken
 * worker waits. Logs what it did; a refusal of the nice value (seccomp,
 * EPERM) is a warning and changes nothing else.
 */
#define LOADER_GIVE_WAY	(256u << 10)

void loader_lower_priority(const struct config *c, const char *who);

#endif
