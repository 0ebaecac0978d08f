/* ocspd.h - the OCSP responders in force: loaded from the config's files, with their signed-response cache */
#ifndef REVCHECK_SVC_OCSPD_H
#define REVCHECK_SVC_OCSPD_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "ocsp.h"

/*
 * One generation of the settings (live.h) holds one of these: the CAs
 * served, each with its signer, and a cache of signed responses shared
 * by every thread. A SIGHUP builds a new one (files read again, an empty
 * cache); nothing in it changes once built but the cache, which has its
 * own locks.
 */
struct ocspd {
	struct ocsp_responder *r[CONFIG_MAX_OCSP];
	size_t		 n;		/* 0: the responder is off */
	struct ocsp_cache *cache;	/* NULL when n is 0 */
	const char	*path;		/* borrowed from the config */
	size_t		 path_len;
};

/*
 * Loads c's responders: each file read as a trusted file
 * (loader_read_trusted: regular, owner, not group- or world-writable),
 * the key wiped after use, then checked (ocsp_responder_new). c must
 * outlive o (o borrows the path). Returns 0, or -1 with err naming the
 * responder and the file; o is then empty.
 */
int ocspd_init(struct ocspd *o, const struct config *c, char *err,
    size_t errlen);

/* Frees what o holds and zeroes it. Safe on a zeroed o. */
void ocspd_free(struct ocspd *o);

/*
 * Whether url is for the responder: the path itself (POST), or the path
 * and "/" and more (GET; for the path "/", any "/..." the other routes
 * did not take). *rest is set to what follows, the base64 request, or
 * "" for the path itself. False when o is off.
 */
bool ocspd_route(const struct ocspd *o, const char *url, const char **rest);

#endif
