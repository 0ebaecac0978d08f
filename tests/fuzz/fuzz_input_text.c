/* fuzz_input_text.c - text revocation lists (one id per line) from untrusted bytes */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ZERO_SCOPE \
	"x509:0000000000000000000000000000000000000000000000000000000000000000"

/* Reads data in one scope and checks what a success or failure leaves. */
static void
one(const uint8_t *data, size_t size, const char *scope,
    enum input_format fmt)
{
	struct input_opts o;
	struct input_set s;
	char err[512];
	size_t i;

	memset(&o, 0, sizeof(o));
	o.scope = scope;
	o.format = fmt;
	o.now = 1800000000;
	o.quiet = true;
	o.allow_expired = true;
	input_set_init(&s);
	if (input_read_buf(&s, "fuzz", data, size, &o, err, sizeof(err)) != 0) {
		/* A failure leaves nothing behind and says where. */
		if (s.nrecs != 0 || s.nscopes != 0 || strncmp(err, "fuzz", 4))
			abort();
	} else {
		for (i = 0; i < s.nrecs; i++)
			if (s.recs[i].key.id_len == 0 ||
			    s.recs[i].key.id_len > REVKEY_ID_MAX ||
			    !revkey_scope_valid(s.recs[i].key.scope,
			    s.recs[i].key.scope_len))
				abort();
		input_count_scopes(&s);
	}
	input_set_free(&s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, "default", INPUT_TEXT);
	one(data, size, ZERO_SCOPE, INPUT_TEXT);
	return 0;
}
