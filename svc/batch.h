/* batch.h - the common POST /v1/check batch body read in place, no allocation per item */
#ifndef REVCHECK_SVC_BATCH_H
#define REVCHECK_SVC_BATCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * A batch of 1000 ids parsed by cJSON costs several allocations per item
 * (its tree), the largest single cost of the request. Nearly every batch
 * has one shape, and this module reads exactly that shape where it lies:
 *
 *   {"items":[{"id":"..."},{"id":"...","scope":"..."},...]}
 *
 * with JSON white space between tokens, members of an item in either
 * order, and strings of printable ASCII (0x20-0x7e) without '"' or '\'.
 * Anything else (another member or kind of item, a repeated member, an
 * escape, a byte outside that range, a number, more items than allowed,
 * trailing data) is not this shape, and the caller reads the body the
 * general way, cJSON and all, which answers it exactly as before, errors
 * included. So this is a fast path that either understands a body
 * completely or leaves it alone; it never answers anything itself.
 */

struct batch_item {
	const char	*id;		/* into the body, not NUL-terminated */
	const char	*scope;		/* NULL: no "scope" member */
	uint32_t	 id_len;	/* may be 0 ("id":"") */
	uint32_t	 scope_len;
};

/*
 * An upper bound on the items of a len-byte body of that shape (each
 * item takes at least 10 bytes with its comma), for sizing the items
 * array: min(max, len / 10 + 1). This function can't fail.
 */
size_t batch_items_bound(size_t len, size_t max);

/*
 * Reads body[0..len) as the shape above into items[0..*n), at most max
 * items (cap: room in items). Returns 0 with *n set and every pointer
 * into body, or -1 when body is not exactly that shape or holds more
 * than max items (*n undefined; nothing else touched). Reads nothing
 * outside body; no allocation, no recursion.
 */
int batch_parse(const char *body, size_t len, struct batch_item *items,
    size_t max, size_t *n);

#endif
