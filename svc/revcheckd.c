/* revcheckd.c - the revocation check daemon: startup, signals, reload loop */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "live.h"
#include "ocspd.h"
#include "loader.h"
#include "log.h"
#include "notify.h"
#include "publish.h"
#include "server.h"
#include "snapshot.h"
#include "sync.h"
#include "trust.h"
#include "util.h"

#define DRAIN_MS	10000	/* SIGTERM: how long requests may finish */
#define RETRY_EMPTY	30	/* seconds between retries with no filter */
#define DELTA_POLL_MS	200	/* an origin looks for new deltas this often */
#define RESYNC_MAX	5	/* s: an edge not ready asks upstream this often */

/* The command line, read again on SIGHUP. */
static int saved_argc;
static char **saved_argv;

static volatile sig_atomic_t got_term;
static volatile sig_atomic_t got_hup;
static int sig_pipe[2] = { -1, -1 };

static void
on_signal(int sig)
{
	int saved = errno;

	if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
	if (sig_pipe[1] != -1)
		(void)!write(sig_pipe[1], "x", 1);
	errno = saved;
}

static int
setup_signals(void)
{
	struct sigaction sa;

	if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1 ||
	    sigaction(SIGHUP, &sa, NULL) == -1)
		return -1;
	sa.sa_handler = SIG_IGN;
	return sigaction(SIGPIPE, &sa, NULL);
}

/*
 * An existing directory the daemon needs: a directory, usable with mode
 * (R_OK, W_OK), and never writable by others (a world-writable state
 * directory would let anyone replace the rollback state).
 */
static int
dir_usable(const char *key, const char *dir, int mode, char *err,
    size_t errlen)
{
	struct stat st;

	if (stat(dir, &st) == -1) {
		snprintf(err, errlen, "%s: %s: %s", key, dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s: not a directory", key, dir);
		return -1;
	}
	if ((st.st_mode & S_IWOTH) != 0) {
		snprintf(err, errlen, "%s: %s: writable by every user (mode "
		    "%04o); chmod o-w it", key, dir, (unsigned)(st.st_mode &
		    07777));
		return -1;
	}
	if (access(dir, mode | X_OK) == -1) {
		snprintf(err, errlen, "%s: %s: %s", key, dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* The directory path names a file or directory in. 0, or -1 if too long. */
static int
parent_dir(const char *path, char *out, size_t cap)
{
	char *slash;
	int n;

	n = snprintf(out, cap, "%s", path);
	if (n < 0 || (size_t)n >= cap)
		return -1;
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	if ((slash = strrchr(out, '/')) == NULL)
		memcpy(out, ".", 2);
	else if (slash == out)
		out[1] = '\0';
	else
		*slash = '\0';
	return 0;
}

/*
 * The state directory, made (one level, mode 0750) when create and it is
 * missing; with !create, a missing one passes when its parent would let
 * the daemon make it.
 */
static int
state_dir_prepare(const char *dir, bool create, char *err, size_t errlen)
{
	char parent[PATH_MAX];

	if (access(dir, F_OK) == 0)
		return dir_usable("state_dir", dir, W_OK, err, errlen);
	if (errno != ENOENT) {
		snprintf(err, errlen, "state_dir: %s: %s", dir,
		    strerror(errno));
		return -1;
	}
	if (create) {
		if (mkdir(dir, 0750) == -1) {
			snprintf(err, errlen, "state_dir: cannot create %s: %s",
			    dir, strerror(errno));
			return -1;
		}
		log_info("created state directory %s (mode 0750)", dir);
		return dir_usable("state_dir", dir, W_OK, err, errlen);
	}
	if (parent_dir(dir, parent, sizeof(parent)) == -1) {
		snprintf(err, errlen, "state_dir: path too long");
		return -1;
	}
	if (dir_usable("state_dir", parent, W_OK, err, errlen) == -1) {
		snprintf(err + strlen(err), errlen - strlen(err), " (%s is "
		    "missing and cannot be created there)", dir);
		return -1;
	}
	return 0;
}

/* --check-config: the settings hang together and every key loads. */
static int
check_config(const struct config *c)
{
	struct sign_ring ring;
	struct trust tr;
	struct ocspd od;
	char err[512], dir[PATH_MAX];
	int rc = 0;

	if (config_validate(c, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s%s%s\n", c->config_file ?
		    c->config_file : "", c->config_file ? ": " : "", err);
		return -1;
	}
	if ((c->filter_dir != NULL && dir_usable("filter_dir", c->filter_dir,
	    R_OK, err, sizeof(err)) == -1) ||
	    state_dir_prepare(c->state_dir, false, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s\n", err);
		return -1;
	}
	/* An audit log elsewhere: its directory must take the file. */
	if (c->audit_log != NULL && parent_dir(c->audit_log, dir,
	    sizeof(dir)) == -1) {
		fprintf(stderr, "revcheckd: audit_log: path too long\n");
		return -1;
	}
	if (c->audit_log != NULL && dir_usable("audit_log", dir, W_OK, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s\n", err);
		return -1;
	}
	sign_ring_init(&ring);
	if (loader_load_ring(&ring, c, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s\n", err);
		rc = -1;
	}
	sign_ring_free(&ring);
	if (rc == 0 && trust_init(&tr, c, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: issuers: %s\n", err);
		rc = -1;
	}
	trust_free(&tr);
	if (rc == 0 && ocspd_init(&od, c, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s\n", err);
		rc = -1;
	}
	ocspd_free(&od);
	return rc;
}

/*
 * A staleness limit turned off is said loudly, at start and after each
 * SIGHUP that leaves it off: the defaults (max_age 2h, max_lag 5m) are on.
 */
static void
warn_limits_off(const struct config *c)
{
	if (c->max_age == 0)
		log_warn("max_age is 0 (off): a filter stays in service until "
		    "its signed expires_at, however long ago it was issued");
	if (c->upstream_filter != NULL && c->max_lag == 0)
		log_warn("max_lag is 0 (off): this edge keeps answering "
		    "not_revoked from the filter it has while it knows of a "
		    "newer version or delta it cannot load, until that filter "
		    "expires");
}

/*
 * The generation in force. Only this (the main) thread swaps it, so the
 * slot's own reference keeps it alive for as long as this thread uses it.
 */
static struct live *
live_cur(struct live_slot *ls)
{
	return atomic_load(&ls->cur);
}

/*
 * SIGHUP: reads the file and flags again and builds the next generation
 * of the settings in force (live.h): every live setting, the trusted
 * issuers (JWKS files and URLs, secrets: a new set, with an empty
 * verified-token cache, so no token verified under the old set is taken
 * on trust) and the introspection clients, then the trusted filter keys.
 * Only when all of it loaded is anything changed: the generation is
 * swapped in whole, the loader and the authority client take its policy
 * and limits, and log_level and log_format apply. Restart-only settings
 * that changed keep their running values and are named in the log (and
 * in /v1/status, config.restart_pending). A configuration that does not
 * validate or load changes nothing.
 */
static void
reload_config(struct config *c, struct loader *l, struct snapshot_slot *sl,
    struct live_slot *ls, struct sync *sync)
{
	struct live *cur = live_cur(ls), *nl = NULL;
	struct config nc;
	char err[1024], changed[768], restart[512];
	char *tmp[CONFIG_MAX_KEYS];
	size_t n, nlive, nrestart;

	config_init(&nc);
	if (config_from_args(&nc, saved_argc, saved_argv, err,
	    sizeof(err)) == -1 || config_validate(&nc, err,
	    sizeof(err)) == -1)
		goto refuse;
	nrestart = config_restart_keys(&cur->cfg, &nc, restart,
	    sizeof(restart));
	/* What will be in force: the new live keys, the running rest. */
	if (config_keep_restart(&nc, &cur->cfg, err, sizeof(err)) == -1 ||
	    config_validate(&nc, err, sizeof(err)) == -1)
		goto refuse;
	nlive = config_changed_keys(&cur->cfg, &nc, true, changed,
	    sizeof(changed));
	if ((nl = live_new(&nc, cur->gen + 1, util_now(), err,
	    sizeof(err))) == NULL)
		goto refuse;	/* err names the issuer and the file */
	snprintf(nl->pending, sizeof(nl->pending), "%s", restart);
	if (live_start(nl, cur, err, sizeof(err)) == -1 ||
	    loader_set_keys(l, sl, &nc, err, sizeof(err)) == -1)
		goto refuse;
	/* Everything loaded: from here on nothing can fail. */
	live_swap(ls, nl);
	loader_set_policy(l, &nl->policy);
	sync_set_limits(sync, &nl->cfg);
	log_set_level((enum log_level)nl->cfg.log_level);
	log_set_json(nl->cfg.log_json);
	/* c keeps the key paths in force (only this thread reads them). */
	memcpy(tmp, c->trusted_keys, sizeof(tmp));
	memcpy(c->trusted_keys, nc.trusted_keys, sizeof(tmp));
	memcpy(nc.trusted_keys, tmp, sizeof(tmp));
	n = c->ntrusted;
	c->ntrusted = nc.ntrusted;
	nc.ntrusted = n;
	c->log_level = nl->cfg.log_level;
	c->log_json = nl->cfg.log_json;
	log_info("SIGHUP: configuration generation %llu applied: %s%s; "
	    "trusted keys, issuers' keys and secrets re-read, verified-token "
	    "cache emptied", (unsigned long long)nl->gen,
	    nlive > 0 ? "changed " : "no live setting changed",
	    nlive > 0 ? changed : "");
	trust_log(&nl->trust);
	warn_limits_off(&nl->cfg);
	if (!nl->cfg.revocation_only && nl->cfg.nissuers == 0)
		log_warn("no trusted token issuer is configured: every token "
		    "is refused");
	nl = NULL;
	if (nrestart > 0)
		log_warn("SIGHUP: %s changed; not applied until a restart "
		    "(the running values stay)", restart);
	live_note_reload(ls, util_now(), NULL);
	goto out;
refuse:
	log_err("SIGHUP: configuration not reloaded, nothing changed: %s",
	    err);
	/* Visible in /v1/status and /metrics too, not only in the log. */
	live_note_reload(ls, util_now(), err);
out:
	live_release(nl);
	config_free(&nc);
}

/*
 * Logs each change of the filter's state once: loaded, stale (and why),
 * fresh again, none. *prev holds the last state logged (-1: none yet).
 */
static void
log_filter_state(struct snapshot_slot *sl, const struct stale_policy *p,
    int *prev)
{
	struct snapshot *s = snapshot_acquire(sl);
	enum stale_reason sr = STALE_FRESH;
	char when[96] = "", at[UTIL_RFC3339_LEN];
	int64_t now = util_now();
	uint64_t v = 0;
	int st;

	if (s != NULL) {
		sr = snapshot_stale(s, p, now, sl);
		v = s->version;
		/* An expired filter says when, as its expires_at is signed. */
		if (sr == STALE_EXPIRED) {
			util_rfc3339(at, s->info->expires_at);
			snprintf(when, sizeof(when), " at %s, %lld s ago", at,
			    (long long)(now - s->info->expires_at));
		}
		snapshot_release(s);
	}
	st = s == NULL ? 0 : sr == STALE_FRESH ? 1 : 2;
	if (st == *prev)
		return;
	if (st == 2)
		log_warn("filter state: stale (%s%s), version %llu; checks "
		    "answer 503 filter_stale", stale_reason_str(sr), when,
		    (unsigned long long)v);
	else if (st == 1 && *prev == 2)
		log_info("filter state: fresh again, version %llu",
		    (unsigned long long)v);
	else if (st == 0 && *prev != -1)
		log_warn("filter state: no filter in service; checks answer "
		    "503 no_filter");
	*prev = st;
}

static bool
fresh_loaded(struct snapshot_slot *sl, const struct stale_policy *p)
{
	struct snapshot *s = snapshot_acquire(sl);
	bool ok;

	if (s == NULL)
		return false;
	ok = snapshot_stale(s, p, util_now(), sl) == STALE_FRESH;
	snapshot_release(s);
	return ok;
}

/* When an edge that is not ready asks upstream for its filter next. */
struct resync {
	double	at;	/* monotonic; 0: the next tick */
	double	gap;	/* seconds; 0: fresh */
};

/*
 * An edge without a fresh filter (none yet, or stale: expired, lagging)
 * does not wait out sync_interval to ask upstream again: it kicks the
 * sync after 1, 2, 4 ... seconds, up to RESYNC_MAX (or sync_interval when
 * shorter), so that it is ready within seconds of the origin coming back,
 * with no client request.
 * NULL-safe (an origin has no sync).
 */
static void
resync_when_stale(struct sync *sync, bool fresh, double now,
    int64_t interval, struct resync *r)
{
	if (sync == NULL)
		return;
	if (fresh) {
		r->at = 0;
		r->gap = 0;
		return;
	}
	if (r->gap == 0) {
		r->gap = 1;
		r->at = now + r->gap;
		return;
	}
	if (now < r->at)
		return;
	sync_kick(sync);
	r->gap *= 2;
	if (r->gap > RESYNC_MAX)
		r->gap = RESYNC_MAX;
	if (r->gap > (double)interval)
		r->gap = (double)interval;
	r->at = now + r->gap;
}

/* Sets up inotify on the filter directory; -1 leaves the poll alone. */
static int
watch_dir(const char *dir)
{
	int fd;

	if (dir == NULL)
		return -1;
	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		return -1;
	if (inotify_add_watch(fd, dir, IN_MOVED_TO | IN_CREATE |
	    IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF) == -1) {
		log_warn("inotify on %s: %s; polling only", dir,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Drains inotify events; true when one touched "current". */
static bool
read_events(int fd)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	bool hit = false;
	ssize_t n;
	size_t off;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off + sizeof(*ev) <= (size_t)n;
		    off += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			if (ev->len == 0 || strcmp(ev->name,
			    PUBLISH_CURRENT) == 0)
				hit = true;
		}
	}
	return hit;
}

/*
 * Edge mode: starts the sync thread and gives the server its hooks
 * (status, metrics, and with an authority the settling of positives).
 * An origin has nothing to start. Returns 0, or -1 with err.
 */
static int
start_edge(struct config *c, struct loader *l, struct snapshot_slot *sl,
    struct server_ctx *ctx, struct sync **sync, char *err, size_t errlen)
{
	if (c->upstream_filter == NULL)
		return 0;
	if ((*sync = sync_start(c, l, sl, err, errlen)) == NULL)
		return -1;
	ctx->status_extra = sync_status_json;
	ctx->status_extra_arg = *sync;
	ctx->metrics_extra = sync_metrics;
	ctx->metrics_extra_arg = *sync;
	if (c->upstream_check != NULL) {
		ctx->settle = sync_settle;
		ctx->settle_arg = *sync;
		ctx->degraded = sync_degraded;
		ctx->degraded_arg = *sync;
	}
	return 0;
}

/* Says READY=1 once a fresh filter is loaded, and again after a lapse. */
static void
announce_ready(bool *ready, struct snapshot_slot *sl, const struct live *lv,
    struct loader *l)
{
	if (!*ready && fresh_loaded(sl, &lv->policy)) {
		*ready = true;
		notify_send("READY=1");
		log_info("ready: serving filter version %llu",
		    (unsigned long long)loader_highest(l));
	} else if (*ready && !fresh_loaded(sl, &lv->policy))
		*ready = false;	/* re-announce once fresh again */
}

/* How long one tick may wait in poll(), in milliseconds. */
static int
tick_timeout(const struct config *c, const struct live *lv, uint64_t wd_usec)
{
	int timeout;

	timeout = (int)(lv->cfg.poll_interval * 1000);
	if (wd_usec != 0 && (uint64_t)timeout * 2000 > wd_usec)
		timeout = (int)(wd_usec / 2000);
	if (timeout > 1000)
		timeout = 1000;	/* readiness follows the clock */
	if (c->filter_dir != NULL && timeout > DELTA_POLL_MS)
		timeout = DELTA_POLL_MS;
	return timeout;
}

/* Gives back a released table copy left unused reload_spare seconds. */
static void
trim_spare(const struct config *c)
{
	size_t freed;

	if (c->reload_spare > 0 &&
	    (freed = util_copy_trim((double)c->reload_spare)) > 0)
		log_info("reload_spare: %zu bytes of a released table "
		    "copy given back after %llds unused", freed,
		    (long long)c->reload_spare);
}

/* SIGHUP: the next settings, the audit log reopened, filters read again. */
static void
on_hup(struct config *c, struct loader *l, struct snapshot_slot *sl,
    struct live_slot *live, struct sync *sync)
{
	log_info("SIGHUP: reloading");
	notify_reloading();
	reload_config(c, l, sl, live, sync);
	loader_reopen_audit(l);
	loader_reverify(l, sl);
	loader_poll(l, sl, true);
	sync_kick(sync);
	notify_send("READY=1");
}

/*
 * The watchdog is fed only when the HTTP workers answer a request, so a
 * wedged server gets restarted even though the main loop still runs.
 */
static void
feed_watchdog(struct server *srv, uint64_t wd_usec)
{
	unsigned pt = wd_usec / 4000 > 2000 ? 2000 :
	    wd_usec / 4000 < 100 ? 100 :
	    (unsigned)(wd_usec / 4000);

	if (server_probe(srv, pt) == 0)
		notify_send("WATCHDOG=1");
	else
		log_warn("watchdog: the HTTP server did not answer "
		    "/healthz; not feeding the watchdog");
}

/*
 * The main loop, until SIGTERM (or poll() fails): signals, the
 * connection sweep, SIGHUP, new filters (inotify, the poll fallback,
 * deltas, retries with none fresh), an edge's resync, the watchdog.
 */
static void
main_loop(struct config *c, struct loader *l, struct snapshot_slot *sl,
    struct live_slot *live, struct sync *sync, struct server *srv, int ino)
{
	struct pollfd pfd[2];
	struct live *lv;
	struct resync kick = { 0, 0 };
	char drain[64];
	double last_poll, last_try, last_wd = 0, now;
	uint64_t wd_usec;
	bool ready = false;
	int n, fstate = -1;

	loader_poll(l, sl, true);
	last_poll = last_try = util_monotime();
	wd_usec = notify_watchdog_usec();

	while (!got_term) {
		lv = live_cur(live);
		announce_ready(&ready, sl, lv, l);
		pfd[0].fd = sig_pipe[0];
		pfd[0].events = POLLIN;
		pfd[1].fd = ino;
		pfd[1].events = POLLIN;
		n = poll(pfd, ino != -1 ? 2 : 1, tick_timeout(c, lv, wd_usec));
		if (n == -1 && errno != EINTR) {
			log_err("poll: %s", strerror(errno));
			break;
		}
		if (n > 0 && (pfd[0].revents & POLLIN))
			while (read(sig_pipe[0], drain, sizeof(drain)) > 0)
				;
		if (got_term)
			break;
		now = util_monotime();
		server_sweep(srv);
		trim_spare(c);
		if (got_hup) {
			got_hup = 0;
			on_hup(c, l, sl, live, sync);
			lv = live_cur(live);
			last_poll = last_try = now;
		}
		if (ino != -1 && n > 0 && (pfd[1].revents & POLLIN) &&
		    read_events(ino)) {
			loader_poll(l, sl, false);
			last_poll = now;
		}
		if (now - last_poll >= lv->cfg.poll_interval) {
			loader_poll(l, sl, false);
			last_poll = now;
		}
		/* Deltas arrive within DELTA_POLL_MS (filterbuild follow). */
		(void)loader_poll_chain(l, sl);
		log_filter_state(sl, &lv->policy, &fstate);
		resync_when_stale(sync, fresh_loaded(sl, &lv->policy), now,
		    c->sync_interval, &kick);
		if (!fresh_loaded(sl, &lv->policy) &&
		    now - last_try >= RETRY_EMPTY) {
			loader_poll(l, sl, true);
			last_try = now;
		}
		if (wd_usec != 0 && (now - last_wd) * 2e6 >= (double)wd_usec) {
			feed_watchdog(srv, wd_usec);
			last_wd = now;
		}
	}
}

static int
run(struct config *c)
{
	struct snapshot_slot slot;
	struct loader loader;
	struct server_ctx ctx;
	struct server *srv = NULL;
	struct sync *sync = NULL;
	struct live_slot live;
	struct live *lv;
	char err[512];
	int ino = -1, rc = 1;

	if (state_dir_prepare(c->state_dir, true, err, sizeof(err)) == -1) {
		log_err("%s", err);
		return 1;
	}
	/* Generation 1 of the settings in force (SIGHUP makes the next). */
	if ((lv = live_new(c, 1, util_now(), err, sizeof(err))) == NULL) {
		/* err names the issuer or OCSP responder, and the file. */
		log_err("%s", err);
		return 1;
	}
	live_slot_init(&live);
	live_swap(&live, lv);
	trust_log(&lv->trust);
	warn_limits_off(c);
	if (!c->revocation_only && c->nissuers == 0)
		log_warn("no trusted token issuer is configured: every token "
		    "is refused (set \"issuers\", or token_verification "
		    "\"revocation-only\" when a gateway verifies tokens)");
	snapshot_slot_init(&slot);
	if (loader_init(&loader, c, &lv->policy, err, sizeof(err)) == -1) {
		log_err("%s", err);
		snapshot_slot_free(&slot);
		live_slot_free(&live);
		return 1;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = c;
	ctx.slot = &slot;
	ctx.loader = &loader;
	ctx.live = &live;
	ctx.started_at = util_now();
	if (setup_signals() == -1) {
		log_err("signals: %s", strerror(errno));
		goto out;
	}
	if (start_edge(c, &loader, &slot, &ctx, &sync, err,
	    sizeof(err)) == -1 ||
	    live_start(lv, NULL, err, sizeof(err)) == -1 ||
	    (srv = server_start(&ctx, err, sizeof(err))) == NULL) {
		log_err("%s", err);
		goto out;
	}
	/* The workers exist: what this thread starts from now inherits it. */
	if (c->filter_dir != NULL)
		loader_lower_priority(c, "main");
	log_info("revcheckd %s listening on %s (%s mode, filter dir %s)",
	    REVCHECK_VERSION, c->listen, c->filter_dir ? "origin" : "edge",
	    c->filter_dir ? c->filter_dir : "-");
	ino = watch_dir(c->filter_dir);
	main_loop(c, &loader, &slot, &live, sync, srv, ino);
	log_info("stopping: draining requests in flight");
	notify_send("STOPPING=1");
	rc = 0;
out:
	sync_quiesce(sync);	/* answers what waits on the authority */
	server_stop(srv, DRAIN_MS);
	sync_stop(sync);
	if (ino != -1)
		close(ino);
	snapshot_slot_free(&slot);
	loader_free(&loader);
	live_slot_free(&live);
	if (rc == 0)
		log_info("stopped");
	return rc;
}

/*
 * glibc hands the free space at the top of a thread's heap back to the
 * kernel once it passes a threshold that starts at 128 KiB: a worker that
 * answers a batch of 1000 ids (about 100 KB of answer, freed once sent)
 * gave those pages back after every request (madvise, with a TLB flush
 * on every CPU) and faulted them in again for the next. On a machine
 * where a page fault is costly (the 2-core AMD EPYC VM: 2.9 ms per MB of
 * fresh memory) the batch endpoint answered 2.0-2.2 k such requests a
 * second, and 7.7-9.1 k with a heap that keeps up to 32 MiB free. Blocks
 * of 4 MiB and more (none on the request path; tables and filters are
 * mapped by util.c) are still mapped and unmapped on their own. Setting
 * either value also turns off glibc's moving of both.
 */
static void
tune_malloc(void)
{
#if defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD)
	(void)mallopt(M_TRIM_THRESHOLD, 32 << 20);
	(void)mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
}

int
main(int argc, char **argv)
{
	struct config c;
	char err[1024];
	int rc = 1;

	tune_malloc();
	log_init("revcheckd", LOG_LVL_INFO);
	saved_argc = argc;
	saved_argv = argv;
	config_init(&c);
	if (argc == 1) {
		/* Nothing to serve: say how to start, not what is missing. */
		fprintf(stderr, "usage: revcheckd -c FILE | --filter-dir DIR "
		    "--trusted-key PUB.pem (origin) | --upstream-filter URL "
		    "--upstream-check URL --trusted-key PUB.pem (edge)\n"
		    "try 'revcheckd --help', man revcheckd, or "
		    "config/revcheckd.json\n");
		rc = 2;
		goto out;
	}
	if (config_from_args(&c, argc, argv, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s\n", err);
		if (c.usage_error) {
			fprintf(stderr, "try 'revcheckd --help'\n");
			rc = 2;
		}
		goto out;
	}
	/*
	 * REVCHECK_FAKE_NOW is filterbuild's test hook for building expired
	 * and future filters. The daemon's clock is the same function: set
	 * here, it would freeze, and no filter would ever expire.
	 */
	if ((c.action == CONFIG_CHECK || c.action == CONFIG_RUN) &&
	    getenv("REVCHECK_FAKE_NOW") != NULL) {
		fprintf(stderr, "revcheckd: REVCHECK_FAKE_NOW is set in the "
		    "environment: a test hook that would freeze the daemon's "
		    "clock (no filter would ever go stale); unset it\n");
		goto out;
	}
	switch (c.action) {
	case CONFIG_HELP:
		config_usage(stdout);
		rc = 0;
		goto out;
	case CONFIG_VERSION:
		printf("revcheckd %s\n", REVCHECK_VERSION);
		rc = 0;
		goto out;
	case CONFIG_CHECK:
		if (check_config(&c) == 0) {
			printf("configuration OK\n");
			rc = 0;
		}
		goto out;
	case CONFIG_RUN:
		break;
	}
	if (config_validate(&c, err, sizeof(err)) == -1) {
		fprintf(stderr, "revcheckd: %s\n", err);
		goto out;
	}
	log_init("revcheckd", (enum log_level)c.log_level);
	log_set_json(c.log_json);
	/*
	 * A reload reads the new table into the buffer the table before the
	 * last one left (released once no request can see it): no fresh
	 * pages to fault, zero and unmap each time (reload_spare seconds, 60
	 * by default; the main loop gives it back after that). Off again, it
	 * unmaps.
	 */
	util_copy_keep(c.reload_spare > 0);
	rc = run(&c);
	util_copy_keep(false);
out:
	config_free(&c);
	return rc;
}
