/* fuzz_exact.c - the exact layout's reader and queries on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exact.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keys asked of every view that attaches (docs/FORMAT.md section 7). */
#define PROBES	64

/*
 * Queries of keys and of hashes taken from the input itself: whatever
 * attached, every answer is one of the two and every read in bounds
 * (the sanitizers say otherwise).
 */
static void
probe(const struct exact *e, const uint8_t *data, size_t size)
{
	unsigned char key[16];
	uint64_t h;
	size_t i;
	enum exact_answer a;

	if (e->bytes != (const unsigned char *)data || e->len != size)
		abort();
	for (i = 0; i < PROBES; i++) {
		memset(key, 0, sizeof(key));
		memcpy(key, &i, sizeof(i));
		a = exact_query(e, key, sizeof(key));
		if (a != EXACT_REVOKED && a != EXACT_NOT_REVOKED)
			abort();
	}
	for (i = 0; i + 8 <= size && i < 8 * PROBES; i += 8) {
		memcpy(&h, data + i, 8);
		a = exact_query_hash(e, h);
		if (a != EXACT_REVOKED && a != EXACT_NOT_REVOKED)
			abort();
		(void)exact_query_hash(e, ~h);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct exact e;
	uint8_t *copy;
	uint64_t sum;
	char err[256];

	if (exact_attach(&e, data, size, err, sizeof(err)) == 0)
		probe(&e, data, size);
	else if (exact_query(&e, "k", 1) != EXACT_REVOKED)
		abort();	/* a refused view must fail closed */
	/*
	 * The same bytes with their checksum made right, so that mutations
	 * reach the field checks and the queries behind them.
	 */
	if (size < 8 || (copy = malloc(size)) == NULL)
		return 0;
	memcpy(copy, data, size);
	sum = XXH3_64bits(copy, size - 8);
	memcpy(copy + size - 8, &sum, 8);	/* little-endian hosts */
	if (exact_attach(&e, copy, size, err, sizeof(err)) == 0)
		probe(&e, copy, size);
	free(copy);
	return 0;
}
