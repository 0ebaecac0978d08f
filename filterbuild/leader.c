/* leader.c - one writer per output directory: filterbuild follow's election through a PostgreSQL advisory lock */
/*
 * The argument for why two followers never write at once is in leader.h
 * and docs/OPERATIONS.md. The lock session is used by the main thread
 * (acquisition, the publish gate) and by the beat thread, one at a time
 * under mu.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <openssl/rand.h>

#include "delta.h"
#include "leader.h"
#include "log.h"
#include "publish.h"
#include "util.h"

struct leader {
	pthread_mutex_t	 mu;
	pthread_t	 beat;
	bool		 beat_started;
	atomic_bool	 held;
	atomic_bool	 fenced;	/* held, and LEADER_FENCE_MS passed */
	double		 taken_at;	/* util_monotime() of the acquisition */
	double		 wait_from;	/* ... of the start of the standby */
	atomic_bool	 quit;
	atomic_bool	 reachable;	/* the last election query answered */
	PGconn		*conn;		/* the lock session, under mu */
	const char	*source;
	long long	 key;
	bool		 quiet;
	bool		 said_wait;	/* "standing by" logged */
	bool		 said_down;	/* the server's absence logged */
	atomic_ullong	 handovers;	/* as ld_status() last wrote it */
	char		 out[4096];
	char		 self[320];	/* host:pid */
};

/* Sleeps ms milliseconds in steps, returning early when *stop is set. */
static void
ld_sleep_ms(int ms, volatile sig_atomic_t *stop)
{
	struct timespec ts = { 0, 50 * 1000000L };

	for (; ms > 0 && (stop == NULL || !*stop); ms -= 50)
		(void)nanosleep(&ts, NULL);
}

/* Copies a libpq message into err without its trailing newline. */
static void
ld_msg(char *err, size_t errlen, const char *msg)
{
	size_t n;

	snprintf(err, errlen, "%s", msg);
	n = strlen(err);
	while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
		err[--n] = '\0';
}

/*
 * Runs sql on the lock session and waits at most timeout_ms for its
 * answer; val (vlen bytes) takes the first column of the first row ("" if
 * none). 0, or -1 with err: the session is then in an unknown state and
 * the caller closes it.
 */
static int
ld_query(struct leader *ld, const char *sql, int timeout_ms, char *val,
    size_t vlen, char *err, size_t errlen)
{
	double end = util_monotime() + timeout_ms / 1000.0;
	struct pollfd pfd;
	PGresult *res;
	int f, left, rc = -1;
	bool first = true;

	if (PQsendQuery(ld->conn, sql) != 1)
		goto out_conn;
	for (;;) {
		if ((f = PQflush(ld->conn)) < 0)
			goto out_conn;
		if (f == 0 && !PQisBusy(ld->conn))
			break;
		left = (int)((end - util_monotime()) * 1000.0);
		if (left <= 0) {
			snprintf(err, errlen, "no answer within %d ms",
			    timeout_ms);
			return -1;
		}
		pfd.fd = PQsocket(ld->conn);
		pfd.events = POLLIN | (f == 1 ? POLLOUT : 0);
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			goto out_conn;
		if (PQconsumeInput(ld->conn) != 1)
			goto out_conn;
	}
	while ((res = PQgetResult(ld->conn)) != NULL) {
		if (first && PQresultStatus(res) == PGRES_TUPLES_OK) {
			snprintf(val, vlen, "%s", PQntuples(res) > 0 &&
			    PQnfields(res) > 0 ? PQgetvalue(res, 0, 0) : "");
			rc = 0;
		} else if (first) {
			ld_msg(err, errlen, PQresultErrorMessage(res));
		}
		first = false;
		PQclear(res);
	}
	return rc;
out_conn:
	ld_msg(err, errlen, PQerrorMessage(ld->conn));
	return -1;
}

/* Drops the session (and with it the lock) under mu; logs why once. */
static void
ld_lose(struct leader *ld, const char *why)
{
	bool was = atomic_exchange(&ld->held, false);

	atomic_store(&ld->fenced, false);
	atomic_store(&ld->reachable, false);	/* until the next try says */

	PQfinish(ld->conn);
	ld->conn = NULL;
	if (was)
		log_warn("follow: leader: %s: stopped writing, standing by",
		    why);
}

/* The beat: keeps the writer's session from idle_session_timeout. */
static void *
ld_beat(void *arg)
{
	struct leader *ld = arg;
	char val[16], err[512], why[600];

	while (!atomic_load(&ld->quit)) {
		ld_sleep_ms(LEADER_BEAT_MS, NULL);
		if (!atomic_load(&ld->held))
			continue;
		(void)pthread_mutex_lock(&ld->mu);
		if (atomic_load(&ld->held) && ld->conn != NULL &&
		    ld_query(ld, "SELECT 1", LEADER_IDLE_MS, val, sizeof(val),
		    err, sizeof(err)) != 0) {
			snprintf(why, sizeof(why), "the lock session is lost "
			    "(%s)", err);
			ld_lose(ld, why);
		}
		(void)pthread_mutex_unlock(&ld->mu);
	}
	return NULL;
}

/*
 * publish_gate_fn for a head: refused when the directory already has a
 * newer head of the same base, or the delta after the head's, which only
 * another writer can have put there.
 */
static int
ld_head_gate(const char *tmp, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char e2[256], next[4200], name[DELTA_NAME_LEN + 1];
	struct delta *nd, *od;
	uint64_t seq, base, oseq = 0;
	bool newer = false;

	if (tmp == NULL || slash == NULL || strcmp(slash + 1,
	    DELTA_HEAD_NAME) != 0)
		return 0;
	if ((nd = delta_open(tmp, e2, sizeof(e2))) == NULL)
		return 0;	/* not a head of ours: nothing to compare */
	seq = delta_info(nd)->seq;
	base = delta_info(nd)->base_version;
	delta_free(nd);
	if ((od = delta_open(path, e2, sizeof(e2))) != NULL) {
		oseq = delta_info(od)->seq;
		newer = delta_info(od)->base_version == base && oseq > seq;
		delta_free(od);
	}
	delta_file_name(name, seq + 1);
	if (!newer && (size_t)snprintf(next, sizeof(next), "%.*s/%s",
	    (int)(slash - path), path, name) < sizeof(next) &&
	    access(next, F_OK) == 0) {
		newer = true;
		oseq = seq + 1;
	}
	if (newer) {
		snprintf(err, errlen, "%s: delta %" PRIu64 " of base %" PRIu64
		    " is already published, this head is of delta %" PRIu64
		    ": another follower writes", path, oseq, base, seq);
		return -1;
	}
	return 0;
}

/*
 * publish_gate_fn: the lock session answers SELECT 1 right before the
 * rename, and the rename comes within LEADER_CHECK_MS of sending it.
 */
static int
ld_gate(void *arg, const char *tmp, const char *path, char *err,
    size_t errlen)
{
	struct leader *ld = arg;
	double t0 = util_monotime();
	char val[16], e2[512], why[600];
	int ms;

	(void)pthread_mutex_lock(&ld->mu);
	if (!atomic_load(&ld->fenced) || ld->conn == NULL) {
		(void)pthread_mutex_unlock(&ld->mu);
		snprintf(err, errlen, "%s: not published: this follower does "
		    "not hold the lock", path);
		return -1;
	}
	if (ld_query(ld, "SELECT 1", LEADER_CHECK_MS, val, sizeof(val), e2,
	    sizeof(e2)) != 0) {
		snprintf(why, sizeof(why), "the lock session did not answer "
		    "before a publish (%s)", e2);
		ld_lose(ld, why);
		(void)pthread_mutex_unlock(&ld->mu);
		snprintf(err, errlen, "%s: not published: %s", path, why);
		return -1;
	}
	(void)pthread_mutex_unlock(&ld->mu);
	if (ld_head_gate(tmp, path, err, errlen) != 0) {
		leader_step_down(ld, err);
		return -1;
	}
	ms = (int)((util_monotime() - t0) * 1000.0);
	if (ms > LEADER_CHECK_MS) {
		snprintf(err, errlen, "%s: not published: the lock check took "
		    "%d ms (at most %d)", path, ms, LEADER_CHECK_MS);
		return -1;
	}
	return 0;
}

/* The key of a name: the first 8 bytes of its SHA-256, as a bigint. */
static long long
ld_key_of(const char *name)
{
	unsigned char sha[32];
	uint64_t k = 0;
	int i;

	(void)util_sha256(sha, name, strlen(name));
	for (i = 0; i < 8; i++)
		k = k << 8 | sha[i];
	return (long long)(int64_t)k;
}

/*
 * The directory's identity: out/LEADER_ID_NAME, 32 random hex digits
 * made once (linked into place, so two followers starting together agree
 * on the first). Written into id[33]. 0, or -1 with err.
 */
static int
ld_dir_id(const char *out, char id[33], char *err, size_t errlen)
{
	unsigned char rnd[16], *buf = NULL;
	char path[4200], mine[33];
	size_t len, i;
	int tries;

	if ((size_t)snprintf(path, sizeof(path), "%s/" LEADER_ID_NAME,
	    out) >= sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", out);
		return -1;
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		snprintf(err, errlen, "no random bytes for %s", path);
		return -1;
	}
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(mine + 2 * i, 3, "%02x", rnd[i]);
	for (tries = 0; tries < 2; tries++) {
		if (util_read_file(path, 64, &buf, &len, err, errlen) == 0) {
			if (len < 32) {
				free(buf);
				snprintf(err, errlen, "%s: not an identity "
				    "(remove it to make a new one)", path);
				return -1;
			}
			memcpy(id, buf, 32);
			id[32] = '\0';
			free(buf);
			return 0;
		}
		if (publish_path(path, mine, 32, 0644, PUBLISH_EXCL, err,
		    errlen) != 0 && errno != EEXIST)
			return -1;
	}
	return -1;
}

struct leader *
leader_new(const char *source, const char *out, const char *name,
    bool quiet, char *err, size_t errlen)
{
	struct leader *ld;
	char id[33], label[200];
	sigset_t all, old;

	if ((ld = calloc(1, sizeof(*ld))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ld->source = source;
	ld->quiet = quiet;
	snprintf(ld->out, sizeof(ld->out), "%s", out);
	if (gethostname(label, sizeof(label)) != 0)
		snprintf(label, sizeof(label), "?");
	label[sizeof(label) - 1] = '\0';
	snprintf(ld->self, sizeof(ld->self), "%s:%ld", label, (long)getpid());
	if (name == NULL && ld_dir_id(out, id, err, errlen) != 0)
		goto fail;
	snprintf(label, sizeof(label), "revcheck follow %s", name != NULL ?
	    name : id);
	ld->key = ld_key_of(label);
	(void)pthread_mutex_init(&ld->mu, NULL);
	/* Signals go to the main thread, whose waits they end. */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	ld->beat_started = pthread_create(&ld->beat, NULL, ld_beat, ld) == 0;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ld->beat_started) {
		snprintf(err, errlen, "cannot start the lock session's beat");
		(void)pthread_mutex_destroy(&ld->mu);
		goto fail;
	}
	publish_set_gate(ld_gate, ld);
	if (!quiet)
		log_info("follow: election: advisory lock %lld (%s %s)", ld->key,
		    name != NULL ? "--lock-name" : "identity of", name != NULL ?
		    name : out);
	return ld;
fail:
	free(ld);
	return NULL;
}

/* Opens the lock session, under mu. 0, or -1 with err. */
static int
ld_connect(struct leader *ld, char *err, size_t errlen)
{
	char opts[256], idle[16];
	const char *kw[] = { "dbname", "options", "keepalives",
	    "keepalives_idle", "keepalives_interval", "keepalives_count",
	    "tcp_user_timeout", "connect_timeout", "application_name", NULL };
	const char *val[] = { ld->source, opts, "1", "1", "1", "2", idle, "3",
	    "revcheck-follow-lock", NULL };

	snprintf(idle, sizeof(idle), "%d", LEADER_IDLE_MS);
	snprintf(opts, sizeof(opts), "-c idle_session_timeout=%d "
	    "-c tcp_keepalives_idle=1 -c tcp_keepalives_interval=1 "
	    "-c tcp_keepalives_count=2", LEADER_IDLE_MS);
	ld->conn = PQconnectdbParams(kw, val, 1);
	if (ld->conn != NULL && PQstatus(ld->conn) == CONNECTION_OK)
		return 0;
	ld_msg(err, errlen, ld->conn == NULL ? "out of memory" :
	    PQerrorMessage(ld->conn));
	PQfinish(ld->conn);
	ld->conn = NULL;
	return -1;
}

/*
 * One try at the lock: 1 taken, 0 held by another, -1 no session (err).
 */
static int
ld_try(struct leader *ld, char *err, size_t errlen)
{
	char sql[96], val[16];
	int rc = -1;

	(void)pthread_mutex_lock(&ld->mu);
	if (ld->conn == NULL && ld_connect(ld, err, errlen) != 0)
		goto out;
	snprintf(sql, sizeof(sql), "SELECT pg_try_advisory_lock(%lld)",
	    ld->key);
	if (ld_query(ld, sql, LEADER_IDLE_MS, val, sizeof(val), err,
	    errlen) != 0) {
		PQfinish(ld->conn);
		ld->conn = NULL;
		goto out;
	}
	rc = strcmp(val, "t") == 0;
	if (rc == 1) {
		ld->taken_at = util_monotime();
		atomic_store(&ld->held, true);
	}
out:
	(void)pthread_mutex_unlock(&ld->mu);
	return rc;
}

/*
 * Records the acquisition in out/LEADER_STATUS_NAME: who holds the lock
 * since when, and how many times it passed from one process to another.
 * Sets *prev (cap bytes) to the previous holder ("" if none). Returns the
 * handover count; a status that cannot be written is logged only.
 */
static unsigned long long
ld_status(struct leader *ld, char *prev, size_t cap)
{
	unsigned long long n = 0;
	unsigned char *buf = NULL;
	const cJSON *h, *c;
	cJSON *j = NULL, *root;
	char path[4200], err[1024], key[24], *txt = NULL;
	size_t len;

	prev[0] = '\0';
	snprintf(key, sizeof(key), "%lld", ld->key);
	if ((size_t)snprintf(path, sizeof(path), "%s/" LEADER_STATUS_NAME,
	    ld->out) < sizeof(path) && util_read_file(path, 65536, &buf, &len,
	    err, sizeof(err)) == 0 && (j = cJSON_Parse((char *)buf)) != NULL) {
		h = cJSON_GetObjectItemCaseSensitive(j, "holder");
		c = cJSON_GetObjectItemCaseSensitive(j, "handovers");
		if (cJSON_IsString(h))
			snprintf(prev, cap, "%s", h->valuestring);
		if (cJSON_IsNumber(c) && c->valuedouble >= 0)
			n = (unsigned long long)c->valuedouble;
	}
	cJSON_Delete(j);
	free(buf);
	if (prev[0] != '\0' && strcmp(prev, ld->self) != 0)
		n++;
	if ((root = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(root, "holder", ld->self) == NULL ||
	    cJSON_AddNumberToObject(root, "since", (double)util_now()) == NULL ||
	    cJSON_AddNumberToObject(root, "handovers", (double)n) == NULL ||
	    cJSON_AddStringToObject(root, "lock_key", key) == NULL ||
	    (txt = cJSON_PrintUnformatted(root)) == NULL)
		log_warn("follow: leader: %s: out of memory", path);
	else if (publish_file(ld->out, LEADER_STATUS_NAME,
	    (unsigned char *)txt, strlen(txt), err, sizeof(err)) != 0)
		log_warn("follow: leader: %s", err);
	cJSON_free(txt);
	cJSON_Delete(root);
	return n;
}

/* Says once per stretch why the lock is not ours. */
static void
ld_say_wait(struct leader *ld, int r, bool wait, const char *err)
{
	if (r < 0 && (!ld->said_down || !wait))
		log_err("follow: election: %s%s", err, wait ?
		    " (retrying every second)" : "");
	else if (r == 0 && !wait)
		log_err("follow: election: another follower holds the lock "
		    "%lld on this directory", ld->key);
	else if (r == 0 && !ld->said_wait && !ld->quiet)
		log_info("follow: standby: another follower holds the lock "
		    "%lld; taking over when its session ends", ld->key);
	if (r < 0)
		ld->said_down = true;
	else
		ld->said_wait = true;
}

int
leader_acquire(struct leader *ld, bool wait, volatile sig_atomic_t *stop)
{
	char err[1024];
	int r;

	assert(ld != NULL && stop != NULL);
	ld->wait_from = util_monotime();
	while (!*stop && (r = ld_try(ld, err, sizeof(err))) != 1) {
		atomic_store(&ld->reachable, r == 0);
		ld_say_wait(ld, r, wait, err);
		if (!wait)
			return 0;
		ld_sleep_ms(r < 0 ? 1000 : LEADER_POLL_MS, stop);
	}
	if (*stop)
		return 0;
	atomic_store(&ld->reachable, true);
	ld->said_wait = ld->said_down = false;
	return 1;
}

int
leader_fence(struct leader *ld, volatile sig_atomic_t *stop)
{
	char prev[320];
	unsigned long long n;
	int left;

	assert(ld != NULL && stop != NULL);
	/* Whatever the last holder was renaming has landed by now. */
	left = LEADER_FENCE_MS - (int)((util_monotime() - ld->taken_at) *
	    1000.0);
	ld_sleep_ms(left, stop);
	if (*stop || !leader_held(ld))
		return 0;
	atomic_store(&ld->fenced, true);
	n = ld_status(ld, prev, sizeof(prev));
	atomic_store(&ld->handovers, n);
	log_info("follow: leader: took the lock %lld after %.1f s (previous "
	    "holder %s; handovers %llu)", ld->key, util_monotime() -
	    ld->wait_from, prev[0] != '\0' ? prev : "none", n);
	return 1;
}

unsigned long long
leader_handovers(struct leader *ld)
{
	return atomic_load(&ld->handovers);
}

bool
leader_held(struct leader *ld)
{
	return atomic_load(&ld->held);
}

bool
leader_reachable(struct leader *ld)
{
	return atomic_load(&ld->reachable);
}

void
leader_step_down(struct leader *ld, const char *why)
{
	(void)pthread_mutex_lock(&ld->mu);
	ld_lose(ld, why);
	(void)pthread_mutex_unlock(&ld->mu);
}

void
leader_free(struct leader *ld)
{
	if (ld == NULL)
		return;
	publish_set_gate(NULL, NULL);
	atomic_store(&ld->quit, true);
	if (ld->beat_started)
		(void)pthread_join(ld->beat, NULL);
	(void)pthread_mutex_destroy(&ld->mu);
	PQfinish(ld->conn);
	free(ld);
}
