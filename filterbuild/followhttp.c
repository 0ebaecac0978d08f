/* followhttp.c - filterbuild follow's own metrics and health endpoints */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "followhttp.h"
#include "leader.h"
#include "netaddr.h"
#include "procstat.h"
#include "util.h"

#define FOLLOWHTTP_BUF	8192
#define HEAD_SLACK	10	/* seconds a head may be late before unready */

static pthread_mutex_t fh_mu = PTHREAD_MUTEX_INITIALIZER;
static struct followhttp_state fh_state;
static uint64_t fh_disconnects;	/* connected -> not, under fh_mu */
static struct MHD_Daemon *fh_daemon;

void
followhttp_set(const struct followhttp_state *s)
{
	pthread_mutex_lock(&fh_mu);
	if (fh_state.connected && !s->connected)
		fh_disconnects++;
	fh_state = *s;
	pthread_mutex_unlock(&fh_mu);
}

/* Appends printf text at out[*len] (cap FOLLOWHTTP_BUF); stops when full. */
static void addf(char *out, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
addf(char *out, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*len >= FOLLOWHTTP_BUF - 1)
		return;
	va_start(ap, fmt);
	w = vsnprintf(out + *len, FOLLOWHTTP_BUF - *len, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= FOLLOWHTTP_BUF - *len)
		*len = FOLLOWHTTP_BUF - 1;	/* truncated: caller checks */
	else
		*len += (size_t)w;
}

static void
gauge(char *out, size_t *len, const char *name, const char *help, double v)
{
	addf(out, len, "# HELP filterbuild_follow_%s %s\n# TYPE "
	    "filterbuild_follow_%s gauge\nfilterbuild_follow_%s %.17g\n", name,
	    help, name, name, v);
}

/* Seconds since the newest head (the base when there is none yet). */
static int64_t
head_age(const struct followhttp_state *s, int64_t now)
{
	int64_t at = s->head_at > s->base_at ? s->head_at : s->base_at;

	return at > 0 ? now - at : -1;
}

/* The text of /metrics into out[FOLLOWHTTP_BUF]; its length, 0 if full. */
static size_t
render_metrics(char *out)
{
	struct followhttp_state s;
	int64_t now = util_now(), age;
	uint64_t disc;
	size_t len = 0;

	pthread_mutex_lock(&fh_mu);
	s = fh_state;
	disc = fh_disconnects;
	pthread_mutex_unlock(&fh_mu);
	age = head_age(&s, now);
	addf(out, &len, "# HELP filterbuild_build_info The running version "
	    "and the source revision it was built from.\n# TYPE "
	    "filterbuild_build_info gauge\nfilterbuild_build_info{version=\""
	    REVCHECK_VERSION "\",revision=\"%s\"} 1\n", procstat_revision());
	gauge(out, &len, "chain", "1 when a base with a readable chain is "
	    "published.", s.have);
	gauge(out, &len, "leader", "1 while this follower holds the "
	    "directory's lock and writes; 0 on a standby.", s.leader);
	gauge(out, &len, "handovers", "Times the directory's lock passed from "
	    "one follower process to another (as this one last saw).",
	    (double)s.handovers);
	gauge(out, &len, "source_up", "1 while the source database answers.",
	    s.connected);
	addf(out, &len, "# HELP filterbuild_follow_source_disconnects_total "
	    "Times the source stopped answering.\n# TYPE "
	    "filterbuild_follow_source_disconnects_total counter\n"
	    "filterbuild_follow_source_disconnects_total %llu\n",
	    (unsigned long long)disc);
	gauge(out, &len, "base_version", "Version of the base in service.",
	    (double)s.base_version);
	gauge(out, &len, "delta_seq", "Deltas published over the base.",
	    (double)s.seq);
	gauge(out, &len, "chain_entries", "Changes in the chain over the "
	    "base (a re-base at --rebase-after).", (double)s.chain_entries);
	gauge(out, &len, "cursor", "The source's change cursor published.",
	    (double)s.cursor);
	gauge(out, &len, "quarantined_rows", "Rows of the source left out "
	    "because no check can name them.", (double)s.quarantined);
	gauge(out, &len, "base_timestamp_seconds", "When the base was issued "
	    "(Unix time; 0: none).", (double)s.base_at);
	gauge(out, &len, "head_timestamp_seconds", "When the newest head was "
	    "issued (Unix time; 0: none yet).", (double)s.head_at);
	gauge(out, &len, "head_age_seconds", "Seconds since the newest head "
	    "(or the base) was issued; a head is signed every --head-every "
	    "when idle.", age >= 0 ? (double)age : 0);
	if (len < FOLLOWHTTP_BUF - 2048)
		len += procstat_format(out + len, FOLLOWHTTP_BUF - len);
	return len < FOLLOWHTTP_BUF - 1 ? len : 0;
}

/* /readyz: NULL when ready, else why not. */
static const char *
not_ready(void)
{
	struct followhttp_state s;
	int64_t age;

	pthread_mutex_lock(&fh_mu);
	s = fh_state;
	pthread_mutex_unlock(&fh_mu);
	/* A standby is one that reaches the database and finds the lock
	 * taken; one that cannot reach it is as unready as a leader would be. */
	if (!s.leader)
		return s.ld != NULL && !leader_reachable(s.ld) ?
		    "source_unavailable" : "standby";
	if (!s.have)
		return "no_chain";
	if (!s.connected)
		return "source_unavailable";
	age = head_age(&s, util_now());
	if (age < 0 || age > 2 * s.head_every + HEAD_SLACK)
		return "head_late";
	return NULL;
}

static enum MHD_Result
reply(struct MHD_Connection *c, unsigned status, const char *ctype,
    const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	(void)MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
	char buf[FOLLOWHTTP_BUF];
	const char *why;
	size_t len;

	(void)cls; (void)version; (void)upload;
	if (*con_cls == NULL) {		/* headers only: wait for the end */
		*con_cls = c;
		return MHD_YES;
	}
	if (*upload_size != 0)
		return MHD_NO;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(c, 405, "text/plain", "GET only\n", 9);
	if (strcmp(url, "/metrics") == 0) {
		if ((len = render_metrics(buf)) == 0)
			return reply(c, 500, "text/plain", "too long\n", 9);
		return reply(c, 200, "text/plain; version=0.0.4; "
		    "charset=utf-8", buf, len);
	}
	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0)
		return reply(c, 200, "application/json", "{\"status\":\"ok\"}\n",
		    16);
	if (strcmp(url, "/readyz") == 0) {
		if ((why = not_ready()) == NULL)
			return reply(c, 200, "application/json",
			    "{\"ready\":true}\n", 15);
		len = (size_t)snprintf(buf, sizeof(buf), "{\"ready\":false,"
		    "\"reason\":\"%s\"}\n", why);
		return reply(c, 503, "application/json", buf, len);
	}
	return reply(c, 404, "text/plain", "not found: /metrics, /healthz, "
	    "/livez, /readyz\n", 47);
}

int
followhttp_start(const char *listen, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned socklen, flags = MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_ERROR_LOG;

	if (netaddr_parse_listen(listen, &ss, &socklen, err, errlen) == -1)
		return -1;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	fh_daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_LIMIT, 32,
	    MHD_OPTION_CONNECTION_TIMEOUT, 10,
	    MHD_OPTION_END);
	if (fh_daemon == NULL) {
		util_errf(err, errlen, "listen: cannot listen on %s: %s%s",
		    listen, errno != 0 ? strerror(errno) : "refused",
		    errno == EADDRINUSE ? " (another process has this port: "
		    "choose another with --listen)" : "");
		return -1;
	}
	return 0;
}

void
followhttp_stop(void)
{
	if (fh_daemon != NULL)
		MHD_stop_daemon(fh_daemon);
	fh_daemon = NULL;
}
