/* fuzz_delta.c - the delta parser on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct delta_entry e, prev;
	struct delta *d;
	char err[512];
	uint64_t i, n;

	d = delta_parse(data, size, err, sizeof(err));
	if (d == NULL)
		return 0;
	/* A delta that parses has strictly ascending, readable entries. */
	n = delta_info(d)->nentries;
	for (i = 0; i < n; i++) {
		if (delta_get(d, i, &e) != 0)
			__builtin_trap();
		if (e.op != DELTA_ADD && e.op != DELTA_REMOVE)
			__builtin_trap();
		if (i > 0 && revkey_cmp(&prev.rec.key, &e.rec.key) >= 0)
			__builtin_trap();
		prev = e;
	}
	if (delta_get(d, n, &e) != -1)
		__builtin_trap();
	delta_free(d);
	return 0;
}
