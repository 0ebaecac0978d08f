/* fetch.h - filterbuild build: inputs from http(s) URLs, conditional GET over a local cache */
#ifndef REVCHECK_FB_FETCH_H
#define REVCHECK_FB_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"

#define FETCH_DEFAULT_MAX_SIZE	(UINT64_C(64) << 20)	/* 64 MiB */
#define FETCH_DEFAULT_TIMEOUT	60			/* seconds */
#define FETCH_MAX_REDIRS	5
#define FETCH_MAX_VALIDATOR	512	/* bytes of an ETag or Last-Modified */

struct fetch_opts {
	const char	*cache_dir;	/* NULL: fetch_cache_dir() picks one */
	uint64_t	 max_size;	/* a body over this fails the input */
	int64_t		 timeout;	/* seconds for the whole transfer */
	const char	*ca_file;	/* NULL: the system's trusted CAs */
	bool		 quiet;		/* no "fetched"/"not modified" lines */
};

/* Fills o with the defaults above. This function can't fail. */
void fetch_opts_init(struct fetch_opts *o);

/*
 * True when input names a URL: a scheme ("[A-Za-z][A-Za-z0-9+.-]*") and
 * "://". Such an input goes to fetch_input(), which refuses every scheme
 * but http and https, so "file:///x" is never read as a local path.
 */
bool fetch_is_url(const char *input);

/*
 * Reads one http:// or https:// input into s as input_read() reads a
 * file (the URL stands for the file name in errors and messages).
 *
 * The cache directory (o->cache_dir, else $CACHE_DIRECTORY as systemd's
 * CacheDirectory= sets it, else $XDG_CACHE_HOME/revcheck, else
 * $HOME/.cache/revcheck) is created 0700 when missing and refused when
 * it is not a directory owned by this user or is writable by group or
 * others. When it holds an entry for the URL with an ETag or a
 * Last-Modified, the request is conditional (If-None-Match,
 * If-Modified-Since) and a 304 is served from the entry; a 200 replaces
 * the entry (written to a temporary file, fsynced and renamed) once its
 * body has been read into s without error. An entry that does not match
 * its recorded length and SHA-256 is ignored (an unconditional GET).
 *
 * Refused, with err naming the URL: another scheme, credentials in the
 * URL, a redirect to another scheme or more than FETCH_MAX_REDIRS, a TLS
 * peer that does not verify (CA and host name), any status but 200 (and
 * 304 to a conditional request), a body over o->max_size, a transfer over
 * o->timeout, an unreachable host. Nothing is ever served from the cache
 * when the server cannot be asked. Returns 0, or -1 with s as it was.
 */
int fetch_input(struct input_set *s, const char *url,
    const struct fetch_opts *o, const struct input_opts *io, char *err,
    size_t errlen);

#endif
