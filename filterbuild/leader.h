/* leader.h - one writer per output directory: filterbuild follow's election through a PostgreSQL advisory lock */
#ifndef REVCHECK_FB_LEADER_H
#define REVCHECK_FB_LEADER_H

#include <signal.h>
#include <stdbool.h>

/*
 * Every follower of a directory opens a lock session of its own to the
 * --source server and tries pg_try_advisory_lock(key) there; the one that
 * holds it writes, the others stand by and try again every
 * LEADER_POLL_MS. A session-level advisory lock lasts as long as its
 * session, so the lock passes on when the writer's session ends:
 *
 *   a killed writer   its socket closes, the server ends the session at once;
 *   a stopped writer  (a lost host, a paused VM) sends nothing: the session
 *                     is opened with idle_session_timeout = LEADER_IDLE_MS,
 *                     which the writer's beat (SELECT 1 every LEADER_BEAT_MS)
 *                     keeps from firing while it runs; server and client
 *                     TCP keepalives and tcp_user_timeout end a session
 *                     whose peer is gone from the network.
 *
 * Fencing (docs/OPERATIONS.md, "Two followers on one directory"): every
 * file the writer makes visible in the directory passes publish's gate
 * (publish_set_gate), which runs SELECT 1 on the lock session right
 * before the rename and refuses unless it answered and the rename comes
 * within LEADER_CHECK_MS of the moment the check was sent. A new writer
 * waits LEADER_FENCE_MS (more than LEADER_CHECK_MS) after taking the lock
 * before it reads the chain and publishes: the old writer's session was
 * alive when its last check was answered, so the lock was taken after
 * that, and the old writer's last rename happened before the new writer's
 * first. Delta files are linked, never renamed over (PUBLISH_EXCL), and a
 * head is refused when a newer one or the next delta is already there, so
 * a writer paused past all of this still cannot fork or roll back the
 * chain.
 */
#define LEADER_IDLE_MS		1500
#define LEADER_BEAT_MS		300
#define LEADER_POLL_MS		200
#define LEADER_CHECK_MS		400
#define LEADER_FENCE_MS		600

/* The file of the election's state in the output directory. */
#define LEADER_STATUS_NAME	"follow-leader.json"
/* The directory's identity, of which the default lock key is a hash. */
#define LEADER_ID_NAME		".follow-id"

struct leader;

/*
 * Prepares the election for the output directory out (which must exist):
 * the key is a hash of name when it is not NULL (--lock-name), else of
 * the directory's identity (out/LEADER_ID_NAME, made on first use), so
 * followers of one directory share it wherever the volume is mounted.
 * Starts the beat thread and installs the publish gate, which refuses
 * everything until leader_acquire() returns 1. source is the libpq
 * connection string, kept by reference. NULL with err on failure.
 */
struct leader *leader_new(const char *source, const char *out,
    const char *name, bool quiet, char *err, size_t errlen);

/*
 * Takes the lock: tries now and, when wait is true, every LEADER_POLL_MS
 * (reconnecting every second while the server is out of reach) until it
 * is taken or *stop is set. Returns 1 with the lock held, 0 when stopped
 * or (wait false) when another follower holds the lock or the server
 * cannot be reached (logged). The gate still refuses every publish: the
 * caller may read (connect to the source) until leader_fence() returns.
 */
int leader_acquire(struct leader *ld, bool wait,
    volatile sig_atomic_t *stop);

/*
 * Waits until LEADER_FENCE_MS have passed since the lock was taken, then
 * opens the gate, records the handover in out/LEADER_STATUS_NAME and logs
 * it. Only then may the caller read the chain on disk, which the last
 * writer no longer changes. Returns 1 when this process is the writer, 0
 * when stopped or the lock was lost meanwhile.
 */
int leader_fence(struct leader *ld, volatile sig_atomic_t *stop);

/*
 * True while this process holds the lock and its session answered its
 * last check or beat. It turns false by itself (logged) when the session
 * is lost; the caller then stops writing and calls leader_acquire().
 */
bool leader_held(struct leader *ld);

/*
 * True when the last election query reached the database (the lock held,
 * or found held by another: a standby that can take over); false before
 * the first query, after the lock session is lost, and while the database
 * does not answer. Safe from any thread; can't fail.
 */
bool leader_reachable(struct leader *ld);

/*
 * Gives the lock up (closes the lock session) when this process has seen
 * that another wrote in its place (why, logged). This function can't
 * fail.
 */
void leader_step_down(struct leader *ld, const char *why);

/*
 * The handover count this process last read or wrote in
 * out/LEADER_STATUS_NAME (0 before it first held the lock). Can't fail.
 */
unsigned long long leader_handovers(struct leader *ld);

/* Stops the beat thread, removes the gate, closes the session, frees ld. */
void leader_free(struct leader *ld);

#endif
