/* chainbuf.h - the verified delta chain in service, held once in memory and served by reference */
#ifndef REVCHECK_SVC_CHAINBUF_H
#define REVCHECK_SVC_CHAINBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The bytes of the delta files 1..n applied over a base and of its head,
 * as they were verified, for /v1/delta. Immutable once built: a snapshot
 * owns one and every response holds a reference, so any number of
 * readers share one copy. A chain extended by new deltas shares the
 * previous one's delta bytes (each file is kept once, refcounted); only
 * the head and the small index are new. Every byte held (files and
 * index) is counted in one process-wide total (chainbuf_live_bytes).
 */
struct chainbuf;

/*
 * Starts a chain that holds prev's deltas (shared, not copied; prev may
 * be NULL: none) and no head. NULL when memory runs out. The caller adds
 * with chainbuf_add and chainbuf_set_head before anyone else sees it.
 */
struct chainbuf *chainbuf_begin(const struct chainbuf *prev);

/*
 * Appends a copy of the verified bytes of the next delta. Returns 0, or
 * -1 when memory runs out or the chain's files would come to more than
 * max bytes (cb is then unusable: release it).
 */
int chainbuf_add(struct chainbuf *cb, const unsigned char *p, size_t len,
    uint64_t max);

/* Sets a copy of the verified head as the last file. 0, or -1 as above. */
int chainbuf_set_head(struct chainbuf *cb, const unsigned char *p,
    size_t len, uint64_t max);

/* How many deltas the chain holds. */
uint64_t chainbuf_deltas(const struct chainbuf *cb);

/*
 * The bytes served for "after": deltas after+1..n, then the head: their
 * offset in the chain's byte sequence and length. This function can't fail.
 */
void chainbuf_range(const struct chainbuf *cb, uint64_t after, size_t *off,
    size_t *len);

/*
 * Copies up to max bytes of the chain's byte sequence from pos into buf;
 * returns how many (0 at the end). This function can't fail.
 */
size_t chainbuf_read(const struct chainbuf *cb, size_t pos, void *buf,
    size_t max);

/* Adds a reference and returns cb. */
struct chainbuf *chainbuf_ref(struct chainbuf *cb);

/* Drops a reference; the last frees. NULL-safe, any thread. */
void chainbuf_release(struct chainbuf *cb);

/* Bytes every chain in memory holds together (files shared once, indexes). */
uint64_t chainbuf_live_bytes(void);

#endif
