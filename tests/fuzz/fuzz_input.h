/* fuzz_input.h - what every revocation-list harness checks after one read */
#ifndef REVCHECK_FUZZ_INPUT_H
#define REVCHECK_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"

#define FUZZ_ZERO_SCOPE \
	"x509:0000000000000000000000000000000000000000000000000000000000000000"

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
	table_builder_sort_unique(&s->builder);
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
