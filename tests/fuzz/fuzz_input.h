/* fuzz_input.h - what every revocation-list harness checks after one read */
#ifndef REVCHECK_FUZZ_INPUT_H
#define REVCHECK_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"
#include "../table_ref.h"

#define FUZZ_ZERO_SCOPE \
	"x509:0000000000000000000000000000000000000000000000000000000000000000"

/*
 * Sorts the set's builder and aborts unless its table file is the one the
 * plain reference (tests/table_ref.h) makes of the same records. Sets of
 * more than FUZZ_REF_MAX records are only sorted.
 */
#define FUZZ_REF_MAX	4096

static inline void
fuzz_builder_as_reference(struct input_set *s)
{
	struct table_rec *recs = NULL;
	unsigned char *b1 = NULL, *b2 = NULL;
	size_t n = input_set_records(s), m, l1, l2, i;
	char err[256];

	if (n <= FUZZ_REF_MAX && (recs = calloc(n + 1, sizeof(*recs))) != NULL)
		for (i = 0; i < n; i++)
			if (table_builder_get(&s->builder, i, &recs[i]) != 0)
				abort();
	table_builder_sort_unique(&s->builder);
	if (recs == NULL)
		return;
	m = ref_sort_unique(recs, n);
	if (m != (size_t)-1 && m != table_builder_count(&s->builder))
		abort();
	if (m != (size_t)-1 &&
	    ref_encode(recs, m, &b1, &l1, err, sizeof(err)) == 0 &&
	    table_builder_encode(&s->builder, &b2, &l2, err, sizeof(err)) == 0 &&
	    (l1 != l2 || memcmp(b1, b2, l1) != 0))
		abort();
	free(b1);
	free(b2);
	free(recs);
}

/*
 * Reads data as one input in a scope and aborts on a broken invariant: a
 * failure leaves the set empty and names the input; a success yields only
 * valid keys. Returns 0 on success with s filled (scopes counted), or -1;
 * either way the caller frees s with input_set_free().
 */
static int
fuzz_input_read(struct input_set *s, const uint8_t *data, size_t size,
    const char *scope, enum input_format fmt)
{
	struct input_opts o;
	struct table_rec r;
	char err[512];
	size_t i;

	memset(&o, 0, sizeof(o));
	o.scope = scope;
	o.format = fmt;
	o.now = 1800000000;
	o.quiet = true;
	o.allow_expired = true;
	/* Reach the parsers behind the policy refusals, too. */
	o.allow_empty = true;
	o.unverified_ok = true;
	o.allow_weak_sig = true;
	o.no_delta = true;
	o.crl_validity = 86400;
	input_set_init(s);
	if (input_read_buf(s, "fuzz", data, size, &o, err, sizeof(err)) != 0) {
		if (input_set_records(s) != 0 || s->nscopes != 0 ||
		    strncmp(err, "fuzz", 4))
			abort();
		return -1;
	}
	for (i = 0; i < input_set_records(s); i++)
		if (table_builder_get(&s->builder, i, &r) != 0 ||
		    r.key.id_len == 0 || r.key.id_len > REVKEY_ID_MAX ||
		    !revkey_scope_valid(r.key.scope, r.key.scope_len))
			abort();
	fuzz_builder_as_reference(s);
	input_count_scopes(s);
	return 0;
}

/* One read with only the common invariants. */
static inline void
fuzz_input_one(const uint8_t *data, size_t size, const char *scope,
    enum input_format fmt)
{
	struct input_set s;

	(void)fuzz_input_read(&s, data, size, scope, fmt);
	input_set_free(&s);
}

#endif
