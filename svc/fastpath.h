/* fastpath.h - single GET /v1/check answered before libmicrohttpd */
#ifndef REVCHECK_SVC_FASTPATH_H
#define REVCHECK_SVC_FASTPATH_H

#include <stdbool.h>
#include <sys/socket.h>

struct server;
struct server_ctx;
struct fastpath;

/*
 * The hand-off to libmicrohttpd: takes fd (non-blocking, accepted from
 * peer) as a connection of its own, with nothing of it read and the
 * deadline its next request had here; on failure it has closed fd
 * (server.c: server_take_connection).
 */
typedef int (*fastpath_handoff_fn)(struct server *s, int fd,
    const struct sockaddr *peer, socklen_t peerlen, double deadline);

/*
 * Starts threads workers on the listening socket lfd (non-blocking; the
 * fast path owns and closes it). Each accepts connections and answers on
 * them, on its own, every request fasthead_parse() reads as a single
 * GET /v1/check that check_get_fast() answers 200 now; the first request
 * that is anything else is refused here (400, the connection closed) when
 * fasthead_judge() finds its head framed two ways, else it and every one
 * after it on that connection go to libmicrohttpd through handoff with
 * none of their bytes read. Idle
 * connections close after cfg->conn_timeout; at most cfg->max_conns are
 * held here and by libmicrohttpd together (mhd_conns counts its), and
 * cfg->max_conns_per_ip from one address here. NULL with err.
 */
struct fastpath *fastpath_start(struct server_ctx *ctx, struct server *srv,
    fastpath_handoff_fn handoff, unsigned (*mhd_conns)(struct server *),
    int lfd, unsigned threads, char *err, size_t errlen);

/* Stops the workers, closes what they hold and the listening socket. */
void fastpath_stop(struct fastpath *fp);

#endif
