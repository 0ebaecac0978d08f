/* fuzz_cert.c - certificates (PEM or DER) and chains from untrusted bytes, as POST /v1/check receives them */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checkio.h"
#include "revkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char enc[REVKEY_ENC_MAX];
	char err[256], text[REVKEY_ID_TEXT_MAX];
	struct revkey k, chain[CHECKIO_CHAIN_MAX_CERTS];
	size_t n = 0, i;

	if (revkey_from_cert_bytes(&k, data, size, err, sizeof(err)) == 0) {
		if (!revkey_scope_valid(k.scope, k.scope_len))
			__builtin_trap();
		(void)revkey_encode(&k, enc);
		(void)revkey_id_text(&k, text);
	}
	/* A chain: every key it gives is whole; never more than the cap. */
	if (checkio_keys_from_pem((const char *)data, size, chain,
	    CHECKIO_CHAIN_MAX_CERTS, &n, err, sizeof(err)) == 0) {
		if (n == 0 || n > CHECKIO_CHAIN_MAX_CERTS)
			__builtin_trap();
		for (i = 0; i < n; i++)
			if (!revkey_scope_valid(chain[i].scope,
			    chain[i].scope_len))
				__builtin_trap();
	}
	/* The same bytes as an id in text, as GET /v1/check receives it. */
	if (revkey_from_text(&k, "x509:0000000000000000000000000000000000000000"
	    "000000000000000000000000", (const char *)data, size, err,
	    sizeof(err)) == 0 && k.id_len == 0)
		__builtin_trap();
	return 0;
}
