/* fuzz_cert.c - certificates (PEM or DER) and chains from untrusted bytes, as POST /v1/check receives them */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checkio.h"
#include "revkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The id of a key in an X.509 scope is a canonical serial: no leading
 * zero byte but for serial 0 (one 0x00) and a negative serial's sign
 * byte, which a magnitude without a leading zero follows. Its text
 * (GET ?id=) reads back as the same key.
 */
static void
check_x509_key(const struct revkey *k)
{
	char text[REVKEY_ID_TEXT_MAX], err[256];
	struct revkey back;
	size_t n;

	if (!revkey_scope_valid(k->scope, k->scope_len) ||
	    !revkey_scope_is_x509(k->scope) || k->id_len == 0 ||
	    k->id_len > REVKEY_ID_MAX)
		__builtin_trap();
	if (k->id[0] == 0 && k->id_len > 1 && k->id[1] == 0)
		__builtin_trap();
	if (k->ndp > REVKEY_DP_MAX || k->nci > REVKEY_CI_MAX ||
	    !(k->cert & REVKEY_CERT_KNOWN))
		__builtin_trap();
	n = revkey_id_text(k, text);
	if (revkey_from_text(&back, k->scope, text, n, err, sizeof(err)) != 0 ||
	    revkey_cmp(&back, k) != 0)
		__builtin_trap();
}

static bool
same_cert_key(const struct revkey *a, const struct revkey *b)
{
	return revkey_cmp(a, b) == 0 && a->cert == b->cert &&
	    a->ndp == b->ndp && a->nci == b->nci &&
	    memcmp(a->dp, b->dp, sizeof(a->dp[0]) * a->ndp) == 0 &&
	    memcmp(a->dp_ci, b->dp_ci, a->ndp) == 0 &&
	    memcmp(a->dp_reasons, b->dp_reasons,
	    sizeof(a->dp_reasons[0]) * a->ndp) == 0 &&
	    memcmp(a->ci, b->ci, sizeof(a->ci[0]) * a->nci) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char enc[REVKEY_ENC_MAX];
	char err[256], text[REVKEY_ID_TEXT_MAX];
	struct revkey k, back, chain[CHECKIO_CHAIN_MAX_CERTS];
	size_t n = 0, i, tlen;
	int one;

	one = revkey_from_cert_bytes(&k, data, size, err, sizeof(err));
	if (one == 0) {
		check_x509_key(&k);
		(void)revkey_encode(&k, enc);
	}
	/* A chain: every key it gives is whole; never more than the cap. */
	if (checkio_keys_from_pem((const char *)data, size, chain,
	    CHECKIO_CHAIN_MAX_CERTS, &n, err, sizeof(err)) == 0) {
		if (n == 0 || n > CHECKIO_CHAIN_MAX_CERTS)
			__builtin_trap();
		for (i = 0; i < n; i++)
			check_x509_key(&chain[i]);
		/* One certificate read both ways gives one key. */
		if (n == 1 && one == 0 && !same_cert_key(&k, &chain[0]))
			__builtin_trap();
	}
	/* The same bytes as an id in text, as GET /v1/check receives it. */
	if (revkey_from_text(&k, "x509:0000000000000000000000000000000000000000"
	    "000000000000000000000000", (const char *)data, size, err,
	    sizeof(err)) == 0) {
		if (k.id_len == 0 || (k.id[0] == 0 && k.id_len > 1 &&
		    k.id[1] == 0))
			__builtin_trap();
		/* Its canonical text reads back as the same key. */
		tlen = revkey_id_text(&k, text);
		if (revkey_from_text(&back, k.scope, text, tlen, err,
		    sizeof(err)) != 0 || revkey_cmp(&back, &k) != 0)
			__builtin_trap();
	}
	return 0;
}
