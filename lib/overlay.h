/* overlay.h - the exact overlay of a delta chain over a base: keys added or removed since it */
#ifndef REVCHECK_OVERLAY_H
#define REVCHECK_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "delta.h"

/*
 * An exact set (no false positives, no false negatives) of the keys the
 * deltas applied so far changed, each with its last change: added (with
 * revoked_at and reason) or removed. A key in the overlay is decided by
 * it; a key not in it is decided by the base. Not thread-safe: a reader
 * shares an overlay only once nothing writes it any more (revcheckd
 * clones, applies, then publishes the new one with a new snapshot).
 */
struct overlay;

/*
 * An empty overlay with a random seed of its own, or NULL when memory
 * runs out or OpenSSL's random generator fails.
 */
struct overlay *overlay_new(void);

/* A deep copy, or NULL when memory runs out. */
struct overlay *overlay_clone(const struct overlay *ov);

/*
 * Applies every entry of a delta (the caller has verified and linked
 * it), the later change of a key replacing the earlier. Returns 0, or -1
 * when memory runs out; the overlay may then hold part of the delta, so
 * the caller discards it.
 */
int overlay_apply(struct overlay *ov, const struct delta *d);

/*
 * The overlay's word on a key: DELTA_ADD (and *rec when not NULL),
 * DELTA_REMOVE, or 0 when the overlay does not know the key.
 */
int overlay_find(const struct overlay *ov, const struct revkey *k,
    struct table_rec *rec);

/* Keys held, and the bytes they take (for status and metrics). */
size_t overlay_count(const struct overlay *ov);
size_t overlay_bytes(const struct overlay *ov);

/*
 * The longest run of occupied slots (wrapping around the end): the most
 * slots a lookup can probe. Each overlay hashes with a random seed of its
 * own, so no choice of keys makes it long.
 */
size_t overlay_longest_run(const struct overlay *ov);

/*
 * Iterates the keys in no particular order, for tools that list the
 * effective set: start with *it = 0; returns the next key's op and fills
 * rec, or 0 when there is no more.
 */
int overlay_next(const struct overlay *ov, size_t *it, struct table_rec *rec);

void overlay_free(struct overlay *ov);

#endif
