/* fuzz_xfcc.c - x-forwarded-client-cert values from untrusted bytes, as /v1/authz reads them behind Envoy */
/*
 * xfcc_parse must refuse with a reason or give elements whose values lie
 * in its buffer, NUL-terminated at their length, Cert and Chain without a
 * NUL byte; then the whole authz path (authzcred_cert_keys: the PEM of
 * every Cert and Chain, the client's subject escaped) runs on the value,
 * and every identity it returns must be free of bytes a header cannot
 * carry raw.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "authzcred.h"
#include "checkio.h"
#include "xfcc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_values(const struct xfcc *x, size_t size)
{
	const struct xfcc_value *v;
	size_t i, k;

	if (x->n == 0 || x->n > XFCC_MAX_ELEMS || x->buf == NULL)
		__builtin_trap();
	for (i = 0; i < x->n; i++) {
		for (k = 0; k < XFCC_KEY_COUNT; k++) {
			v = &x->elem[i].v[k];
			if ((v->s == NULL) != (x->elem[i].count[k] == 0))
				__builtin_trap();
			if (v->s == NULL)
				continue;
			if (v->s < x->buf || v->s + v->len > x->buf + size ||
			    v->s[v->len] != '\0')
				__builtin_trap();
			if ((k == XFCC_CERT || k == XFCC_CHAIN) &&
			    memchr(v->s, '\0', v->len) != NULL)
				__builtin_trap();
			if (x->elem[i].count[k] > 1 && k != XFCC_BY &&
			    k != XFCC_URI && k != XFCC_DNS)
				__builtin_trap();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct revkey keys[CHECKIO_CHAIN_MAX_CERTS];
	char err[256], subj[AUTHZCRED_ID_BUF], *s;
	struct xfcc x;
	size_t n = 0, i;

	err[0] = '\0';
	if (xfcc_parse(&x, (const char *)data, size, err, sizeof(err)) == 0) {
		check_values(&x, size);
		xfcc_free(&x);
	} else if (err[0] == '\0' || x.buf != NULL || x.n != 0) {
		__builtin_trap();
	}
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (authzcred_cert_keys(s, true, keys, CHECKIO_CHAIN_MAX_CERTS, &n,
	    subj, err, sizeof(err)) == 0) {
		if (n == 0 || n > CHECKIO_CHAIN_MAX_CERTS)
			__builtin_trap();
		for (i = 0; subj[i] != '\0'; i++)
			if ((unsigned char)subj[i] <= 0x20 ||
			    (unsigned char)subj[i] >= 0x7f)
				__builtin_trap();
	}
	free(s);
	return 0;
}
