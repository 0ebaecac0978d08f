/* fastpath.c - single GET /v1/check answered before libmicrohttpd */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fasthead.h"
#include "fastpath.h"
#include "log.h"
#include "metrics.h"
#include "sbuf.h"
#include "server.h"
#include "util.h"

/*
 * Most checks are one short GET on a kept-alive connection, and what
 * libmicrohttpd spends on one (its 32 KiB connection pool cleared per
 * request, a response object and each header allocated and freed) is
 * more than the check itself. The fast path owns the listening socket:
 * its workers accept, and on each connection read a request's head with
 * MSG_PEEK. One that fasthead_parse() takes for a single GET /v1/check
 * and check_get_fast() answers 200 is consumed and answered here; for
 * anything else (another endpoint, a refusal, a head not all in yet, a
 * positive an edge's authority must settle, draining) the connection is
 * handed to libmicrohttpd with that request unread, and stays there. The
 * fast path never answers anything libmicrohttpd's path would answer
 * differently: it answers only what both agree on, and leaves every
 * refusal to the path that has all of them.
 */

/* Connections accepted per wake-up, so that one worker does not take all. */
#define ACCEPT_BURST	16

/* Buckets of the per-address connection counts. */
#define IP_BUCKETS	1024

/* Out of descriptors: a worker stops accepting this long (seconds). */
#define ACCEPT_PAUSE	0.1

/*
 * A refused connection is read and dropped this long (seconds), and at
 * most this much, after its 400, so that closing with bytes unread (a
 * reset) does not destroy the answer before the client reads it.
 */
#define REFUSE_LINGER	2.0
#define REFUSE_DRAIN	((size_t)1 << 20)

struct fconn {
	struct fconn	*prev;
	struct fconn	*next;
	int		 fd;
	double		 deadline;	/* monotonic: idle past it, closed */
	struct sockaddr_storage peer;
	socklen_t	 peerlen;
	char		*out;		/* unsent bytes of an answer, or NULL */
	size_t		 out_len;
	size_t		 out_off;
	bool		 refused;	/* a 400 sent: drained, then closed */
	size_t		 drained;
};

struct ipcount {
	struct ipcount	*next;
	unsigned char	 addr[16];
	unsigned	 n;
};

struct fworker {
	struct fastpath	*fp;
	pthread_t	 th;
	bool		 started;
	int		 ep;
	struct fconn	 head;		/* this worker's connections */
	struct sbuf	 body;		/* reused from answer to answer */
	struct sbuf	 hbuf;		/* the answer's head, likewise */
	double		 resume_at;	/* accepting again then, or 0 */
	double		 warned_at;	/* the last "out of descriptors" */
	time_t		 date_sec;
	char		 date[40];	/* "Date: ...\r\n" for date_sec */
};

struct fastpath {
	struct server_ctx *ctx;
	struct server	*srv;
	fastpath_handoff_fn handoff;
	unsigned	(*mhd_conns)(struct server *);
	int		 lfd;
	int		 stopfd;
	_Atomic bool	 stop;
	_Atomic unsigned conns;		/* held here, all workers */
	unsigned	 nw;
	struct fworker	*w;
	pthread_mutex_t	 ip_mu;
	struct ipcount	*ip[IP_BUCKETS];
};

/* The address of a peer as 16 bytes (IPv4 mapped), and its bucket. */
static unsigned
ip_key(const struct sockaddr_storage *ss, unsigned char key[16])
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	uint32_t h = 2166136261u;
	size_t i;

	memset(key, 0, 16);
	if (ss->ss_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6)
		memcpy(key, &sin6->sin6_addr, 16);
	for (i = 0; i < 16; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % IP_BUCKETS;
}

/*
 * Counts one more connection from ss; false when over a limit: both
 * paths together hold max_conns, or this one max_conns_per_ip from ss.
 * The lock also keeps the workers from asking libmicrohttpd at once (its
 * count is summed into one field of the daemon).
 */
static bool
conn_take(struct fastpath *fp, const struct sockaddr_storage *ss)
{
	const struct config *cfg = fp->ctx->cfg;
	unsigned char key[16];
	unsigned b = ip_key(ss, key);
	struct ipcount *e;
	bool ok = true;

	pthread_mutex_lock(&fp->ip_mu);
	if (atomic_load(&fp->conns) + fp->mhd_conns(fp->srv) >=
	    cfg->max_conns) {
		pthread_mutex_unlock(&fp->ip_mu);
		return false;
	}
	for (e = fp->ip[b]; e != NULL; e = e->next)
		if (memcmp(e->addr, key, 16) == 0)
			break;
	if (e == NULL) {
		if ((e = calloc(1, sizeof(*e))) == NULL)
			ok = false;
		else {
			memcpy(e->addr, key, 16);
			e->next = fp->ip[b];
			fp->ip[b] = e;
		}
	}
	if (ok && e->n >= cfg->max_conns_per_ip)
		ok = false;
	if (ok) {
		e->n++;
		atomic_fetch_add(&fp->conns, 1);
	}
	pthread_mutex_unlock(&fp->ip_mu);
	return ok;
}

/* Gives back what conn_take counted. */
static void
conn_give(struct fastpath *fp, const struct sockaddr_storage *ss)
{
	unsigned char key[16];
	unsigned b = ip_key(ss, key);
	struct ipcount *e, **pe;

	pthread_mutex_lock(&fp->ip_mu);
	for (pe = &fp->ip[b]; (e = *pe) != NULL; pe = &e->next)
		if (memcmp(e->addr, key, 16) == 0) {
			if (--e->n == 0) {
				*pe = e->next;
				free(e);
			}
			break;
		}
	atomic_fetch_sub(&fp->conns, 1);
	pthread_mutex_unlock(&fp->ip_mu);
}

/* Takes c off this worker (and its counts); closes fd unless keep_fd. */
static void
conn_drop(struct fworker *w, struct fconn *c, bool keep_fd)
{
	epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
	if (!keep_fd)
		close(c->fd);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	conn_give(w->fp, &c->peer);
	free(c->out);
	free(c);
}

/* libmicrohttpd takes c over, its next request unread. */
static void
conn_handoff(struct fworker *w, struct fconn *c)
{
	int fd = c->fd;
	struct sockaddr_storage peer = c->peer;
	socklen_t plen = c->peerlen;
	double deadline = c->deadline;

	conn_drop(w, c, true);
	metrics_inc(MET_HANDOFF);
	/* On failure (its limits) libmicrohttpd has closed fd. */
	(void)w->fp->handoff(w->fp->srv, fd, (struct sockaddr *)&peer, plen,
	    deadline);
}

/*
 * Out of descriptors: the listening socket stays readable, and a worker
 * that kept asking would spin. It leaves the socket alone for
 * ACCEPT_PAUSE (the kernel's backlog holds the connections meanwhile)
 * and says so at most every 10 s.
 */
static void
accept_pause(struct fworker *w)
{
	double now = util_monotime();

	if (now - w->warned_at >= 10) {
		log_warn("fast path: cannot accept: %s (max_conns %u; raise "
		    "LimitNOFILE)", strerror(errno), w->fp->ctx->cfg->max_conns);
		w->warned_at = now;
	}
	epoll_ctl(w->ep, EPOLL_CTL_DEL, w->fp->lfd, NULL);
	w->resume_at = now + ACCEPT_PAUSE;
}

/* Back to accepting after a pause. */
static void
accept_resume(struct fworker *w)
{
	struct epoll_event ev;

	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	ev.data.ptr = &w->fp->lfd;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->fp->lfd, &ev) == 0)
		w->resume_at = 0;
	else
		w->resume_at = util_monotime() + ACCEPT_PAUSE;
}

static void
accept_some(struct fworker *w)
{
	struct fastpath *fp = w->fp;
	const struct config *cfg = fp->ctx->cfg;
	struct epoll_event ev;
	struct fconn *c;
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1, i;

	for (i = 0; i < ACCEPT_BURST; i++) {
		sl = sizeof(ss);
		fd = accept4(fp->lfd, (struct sockaddr *)&ss, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE)
				accept_pause(w);
			return;
		}
		if (!conn_take(fp, &ss)) {
			close(fd);
			continue;
		}
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			conn_give(fp, &ss);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->peer = ss;
		c->peerlen = sl;
		c->deadline = util_monotime() + cfg->conn_timeout;
		c->next = w->head.next;
		c->prev = &w->head;
		w->head.next->prev = c;
		w->head.next = c;
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = c;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) == -1)
			conn_drop(w, c, false);
	}
}

/* "Date: <IMF-fixdate>\r\n" for now, made again once a second. */
static const char *
date_line(struct fworker *w)
{
	time_t now = time(NULL);
	struct tm tm;

	if (now != w->date_sec && gmtime_r(&now, &tm) != NULL) {
		strftime(w->date, sizeof(w->date),
		    "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
		w->date_sec = now;
	}
	return w->date;
}

/*
 * Sends the answer: the head and body in one call; what the socket does
 * not take now waits in c->out for EPOLLOUT. -1: close the connection.
 */
static int
send_answer(struct fworker *w, struct fconn *c, const char *hdr, size_t hlen,
    const char *body, size_t blen)
{
	struct iovec iov[2] = { { (void *)hdr, hlen }, { (void *)body, blen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	struct epoll_event ev;
	ssize_t n;
	size_t sent, left;

	n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK)
		return -1;
	sent = n > 0 ? (size_t)n : 0;
	if (sent == hlen + blen)
		return 0;
	left = hlen + blen - sent;
	if ((c->out = malloc(left)) == NULL)
		return -1;
	c->out_len = left;
	c->out_off = 0;
	if (sent < hlen) {
		memcpy(c->out, hdr + sent, hlen - sent);
		memcpy(c->out + hlen - sent, body, blen);
	} else
		memcpy(c->out, body + (sent - hlen), left);
	/* Not EPOLLRDHUP: a half-closed peer would wake this at every turn. */
	ev.events = EPOLLOUT;
	ev.data.ptr = c;
	return epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* EPOLLOUT: more of a pending answer; back to reading when it is out. */
static int
flush_out(struct fworker *w, struct fconn *c)
{
	struct epoll_event ev;
	ssize_t n;

	n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
	    MSG_NOSIGNAL);
	if (n == -1)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	c->out_off += (size_t)n;
	if (c->out_off < c->out_len)
		return 0;
	free(c->out);
	c->out = NULL;
	if (c->refused)
		shutdown(c->fd, SHUT_WR);
	ev.events = EPOLLIN | EPOLLRDHUP;
	ev.data.ptr = c;
	return epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/*
 * Answers h (already parsed, still unread) here: 0, or 1 to hand the
 * connection off with it unread, or -1 to close it.
 */
static int
answer(struct fworker *w, struct fconn *c, const struct fasthead *h)
{
	struct server_ctx *ctx = w->fp->ctx;
	struct check_fast cf;
	struct live *lv;
	char drop[FASTHEAD_MAX];
	double t0 = util_monotime(), t1;
	int rc;

	if (atomic_load(&ctx->draining))
		return 1;	/* libmicrohttpd says Connection: close */
	sbuf_clear(&w->body);
	if ((lv = live_enter(ctx->live)) == NULL)
		rc = -1;
	else
		rc = check_get_fast(ctx, lv, h->id, h->id_len, h->scope,
		    h->scope_len, &w->body, &cf);
	live_leave();
	if (rc == -1)
		return 1;
	/* The same head as server_queue's for this answer, without printf. */
	sbuf_clear(&w->hbuf);
	sbuf_addlit(&w->hbuf, "HTTP/1.1 200 OK\r\n");
	sbuf_adds(&w->hbuf, date_line(w));
	sbuf_addlit(&w->hbuf, "Content-Type: " CTYPE_JSON "\r\n"
	    HDR_STATUS ": ");
	sbuf_adds(&w->hbuf, cf.status);
	sbuf_addlit(&w->hbuf, "\r\n" HDR_FILTER_VERSION ": ");
	sbuf_adds(&w->hbuf, cf.ver);
	if (cf.seq[0] != '\0') {
		sbuf_addlit(&w->hbuf, "\r\n" HDR_DELTA_SEQ ": ");
		sbuf_adds(&w->hbuf, cf.seq);
	}
	sbuf_addlit(&w->hbuf, "\r\n" HDR_CACHE ": " HDR_CACHE_DEFAULT "\r\n"
	    HDR_NOSNIFF ": " HDR_NOSNIFF_VALUE "\r\n"
	    "Content-Length: ");
	sbuf_add_u64(&w->hbuf, w->body.len);
	sbuf_addlit(&w->hbuf, "\r\n\r\n");
	if (w->hbuf.oom || w->body.oom)
		return 1;
	/* The head was peeked: this takes exactly it. */
	if (recv(c->fd, drop, h->head_len, 0) != (ssize_t)h->head_len)
		return -1;
	if (send_answer(w, c, w->hbuf.p, w->hbuf.len, w->body.p,
	    w->body.len) == -1)
		return -1;
	t1 = util_monotime();
	metrics_inc(MET_FAST_PATH);
	metrics_request(EP_CHECK, 200);
	metrics_observe_request(EP_CHECK, t1 - t0);
	c->deadline = t1 + ctx->cfg->conn_timeout;
	return 0;
}

/*
 * Refuses the request at the head of c (fasthead_judge said why): a 400
 * with Connection: close, the bytes sent so far dropped, and the
 * connection kept only to drain what else comes (drain_refused) until
 * the client closes, REFUSE_DRAIN bytes or REFUSE_LINGER. -1: close now.
 */
static int
refuse(struct fworker *w, struct fconn *c, const char *why)
{
	char drop[FASTHEAD_MAX];
	ssize_t n;

	sbuf_clear(&w->body);
	server_render_error(&w->body, "bad_request", why);
	sbuf_addlit(&w->body, "\n");
	sbuf_clear(&w->hbuf);
	sbuf_addlit(&w->hbuf, "HTTP/1.1 400 Bad Request\r\n");
	sbuf_adds(&w->hbuf, date_line(w));
	/* In libmicrohttpd's order for server_error's answer. */
	sbuf_addlit(&w->hbuf, "Connection: close\r\n"
	    "Content-Type: " CTYPE_JSON "\r\n"
	    HDR_CACHE ": " HDR_CACHE_DEFAULT "\r\n"
	    HDR_NOSNIFF ": " HDR_NOSNIFF_VALUE "\r\n"
	    "Content-Length: ");
	sbuf_add_u64(&w->hbuf, w->body.len);
	sbuf_addlit(&w->hbuf, "\r\n\r\n");
	metrics_request(EP_OTHER, 400);
	if (w->hbuf.oom || w->body.oom)
		return -1;
	while ((n = recv(c->fd, drop, sizeof(drop), MSG_DONTWAIT)) > 0)
		if ((c->drained += (size_t)n) > REFUSE_DRAIN)
			return -1;
	c->refused = true;
	c->deadline = util_monotime() + REFUSE_LINGER;
	if (send_answer(w, c, w->hbuf.p, w->hbuf.len, w->body.p,
	    w->body.len) == -1)
		return -1;
	if (c->out == NULL)
		shutdown(c->fd, SHUT_WR);
	return 0;
}

/* EPOLLIN on a refused connection: read and drop, until the end. */
static void
drain_refused(struct fworker *w, struct fconn *c)
{
	char drop[FASTHEAD_MAX];
	ssize_t n;

	while ((n = recv(c->fd, drop, sizeof(drop), 0)) > 0)
		if ((c->drained += (size_t)n) > REFUSE_DRAIN)
			break;
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	conn_drop(w, c, false);
}

/*
 * EPOLLIN: every complete request that is the fast path's, in order;
 * the first that is not is judged (fasthead_judge) and refused here, or
 * handed to libmicrohttpd, which judges the rest by the same rules.
 */
static void
on_readable(struct fworker *w, struct fconn *c)
{
	char buf[FASTHEAD_MAX], dec[FASTHEAD_MAX];
	struct fasthead h;
	const char *why;
	ssize_t n;
	int rc;

	if (c->refused) {
		if (c->out == NULL)
			drain_refused(w, c);
		return;
	}
	while (c->out == NULL) {
		n = recv(c->fd, buf, sizeof(buf), MSG_PEEK);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR))
			return;
		if (n <= 0) {
			conn_drop(w, c, false);
			return;
		}
		/*
		 * A head not all in yet is libmicrohttpd's too: peeked bytes
		 * stay readable, and waiting here would spin.
		 */
		if (fasthead_parse(buf, (size_t)n, &h, dec, sizeof(dec)) !=
		    FH_CHECK) {
			if (fasthead_judge(buf, (size_t)n, &why) != FJ_BAD)
				conn_handoff(w, c);
			else if (refuse(w, c, why) == -1)
				conn_drop(w, c, false);
			return;
		}
		rc = answer(w, c, &h);
		if (rc == 1) {
			conn_handoff(w, c);
			return;
		}
		if (rc == -1) {
			conn_drop(w, c, false);
			return;
		}
		if ((size_t)n == h.head_len)
			return;	/* nothing more sent: wait for the next */
	}
}

/* Closes connections idle past their deadline. */
static void
sweep(struct fworker *w)
{
	struct fconn *c, *next;
	double now = util_monotime();

	for (c = w->head.next; c != &w->head; c = next) {
		next = c->next;
		if (now > c->deadline)
			conn_drop(w, c, false);
	}
}

static void *
worker(void *arg)
{
	struct fworker *w = arg;
	struct fastpath *fp = w->fp;
	struct epoll_event evs[64];
	struct fconn *c;
	double next_sweep = util_monotime() + 1;
	int n, i;

	(void)pthread_setname_np(pthread_self(), "revcheckd-fast");
	while (!atomic_load(&fp->stop)) {
		n = epoll_wait(w->ep, evs, 64, w->resume_at != 0 ? 100 : 1000);
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &fp->lfd) {
				accept_some(w);
				continue;
			}
			if (evs[i].data.ptr == &fp->stopfd)
				continue;
			c = evs[i].data.ptr;
			if (c->out != NULL && (evs[i].events & EPOLLOUT)) {
				if (flush_out(w, c) == -1) {
					conn_drop(w, c, false);
					continue;
				}
			}
			if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP |
			    EPOLLERR))
				on_readable(w, c);
		}
		if (w->resume_at != 0 && util_monotime() >= w->resume_at)
			accept_resume(w);
		if (util_monotime() >= next_sweep) {
			sweep(w);
			next_sweep = util_monotime() + 1;
		}
	}
	while (w->head.next != &w->head)
		conn_drop(w, w->head.next, false);
	return NULL;
}

struct fastpath *
fastpath_start(struct server_ctx *ctx, struct server *srv,
    fastpath_handoff_fn handoff, unsigned (*mhd_conns)(struct server *),
    int lfd, unsigned threads, char *err, size_t errlen)
{
	struct fastpath *fp;
	struct epoll_event ev;
	struct fworker *w;
	unsigned i;

	if ((fp = calloc(1, sizeof(*fp))) == NULL ||
	    (fp->w = calloc(threads, sizeof(*fp->w))) == NULL) {
		free(fp);
		close(lfd);
		snprintf(err, errlen, "fast path: out of memory");
		return NULL;
	}
	/* Descriptors not made yet are -1 (0 is a descriptor like any other). */
	fp->stopfd = -1;
	for (i = 0; i < threads; i++)
		fp->w[i].ep = -1;
	fp->ctx = ctx;
	fp->srv = srv;
	fp->handoff = handoff;
	fp->mhd_conns = mhd_conns;
	fp->lfd = lfd;
	fp->nw = threads;
	pthread_mutex_init(&fp->ip_mu, NULL);
	if ((fp->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		snprintf(err, errlen, "fast path: eventfd: %s",
		    strerror(errno));
		goto fail;
	}
	for (i = 0; i < threads; i++) {
		w = &fp->w[i];
		w->fp = fp;
		w->head.next = w->head.prev = &w->head;
		sbuf_init(&w->body, 512, 0);
		sbuf_init(&w->hbuf, 256, 0);
		if ((w->ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
			snprintf(err, errlen, "fast path: epoll_create1: %s",
			    strerror(errno));
			goto fail;
		}
		/* Each connection wakes one worker, not all of them. */
		ev.events = EPOLLIN | EPOLLEXCLUSIVE;
		ev.data.ptr = &fp->lfd;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, lfd, &ev) == -1) {
			snprintf(err, errlen, "fast path: epoll_ctl: %s",
			    strerror(errno));
			goto fail;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = &fp->stopfd;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fp->stopfd, &ev) == -1) {
			snprintf(err, errlen, "fast path: epoll_ctl: %s",
			    strerror(errno));
			goto fail;
		}
	}
	for (i = 0; i < threads; i++) {
		if (pthread_create(&fp->w[i].th, NULL, worker, &fp->w[i]) !=
		    0) {
			snprintf(err, errlen, "fast path: cannot start a "
			    "worker thread");
			goto fail;
		}
		fp->w[i].started = true;
	}
	return fp;
fail:
	fastpath_stop(fp);
	return NULL;
}

void
fastpath_stop(struct fastpath *fp)
{
	uint64_t one = 1;
	struct ipcount *e;
	unsigned i;

	if (fp == NULL)
		return;
	atomic_store(&fp->stop, true);
	if (fp->stopfd >= 0 && write(fp->stopfd, &one, sizeof(one)) == -1)
		log_warn("fast path: cannot wake the workers: %s",
		    strerror(errno));
	for (i = 0; i < fp->nw; i++) {
		if (fp->w[i].started)
			pthread_join(fp->w[i].th, NULL);
		if (fp->w[i].ep >= 0)
			close(fp->w[i].ep);
		sbuf_free(&fp->w[i].body);
		sbuf_free(&fp->w[i].hbuf);
	}
	for (i = 0; i < IP_BUCKETS; i++)
		while ((e = fp->ip[i]) != NULL) {
			fp->ip[i] = e->next;
			free(e);
		}
	if (fp->stopfd >= 0)
		close(fp->stopfd);
	close(fp->lfd);
	pthread_mutex_destroy(&fp->ip_mu);
	free(fp->w);
	free(fp);
}
