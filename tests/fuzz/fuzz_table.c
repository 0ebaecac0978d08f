/* fuzz_table.c - the authoritative table parser and lookup on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct table_rec rec, prev;
	struct table *t;
	char err[512];
	uint64_t i, n;

	t = table_parse(data, size, false, err, sizeof(err));
	if (t == NULL)
		return 0;
	/* A table that parses is sorted, and every record is found again. */
	n = table_count(t);
	for (i = 0; i < n && i < 64; i++) {
		if (table_get(t, i, &rec) != 0)
			__builtin_trap();
		if (i > 0 && revkey_cmp(&prev.key, &rec.key) >= 0)
			__builtin_trap();
		if (table_lookup(t, &rec.key, NULL) != 1)
			__builtin_trap();
		prev = rec;
	}
	table_close(t);
	return 0;
}
