/* fuzz_jwt.c - JWTs from untrusted bytes, as the daemon receives tokens to check */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char enc[REVKEY_ENC_MAX];
	struct revkey k;
	struct jwt full, part;
	char err[256];

	if (jwt_revkey(&k, (const char *)data, size, err, sizeof(err)) == 0) {
		if (k.id_len == 0 || k.id_len > REVKEY_ID_MAX ||
		    !revkey_scope_valid(k.scope, k.scope_len) ||
		    revkey_scope_is_x509(k.scope))
			abort();
		(void)revkey_encode(&k, enc);
	} else if (err[0] == '\0') {
		abort();	/* every failure says why */
	}

	/*
	 * What a verified-token cache hit reads (jwt_parse_claims) is what
	 * a full parse reads: a token jwt_parse takes gives the same claims
	 * and iss, and jwt_parse_claims never refuses one it takes.
	 */
	if (jwt_parse(&full, (const char *)data, size, err, sizeof(err)) == 0) {
		char *a, *b;

		if (jwt_parse_claims(&part, (const char *)data, size, err,
		    sizeof(err)) != 0 || part.header != NULL ||
		    (full.iss == NULL) != (part.iss == NULL) ||
		    (full.iss != NULL && strcmp(full.iss, part.iss) != 0))
			abort();
		a = cJSON_PrintUnformatted(full.claims);
		b = cJSON_PrintUnformatted(part.claims);
		if (a == NULL || b == NULL || strcmp(a, b) != 0)
			abort();
		cJSON_free(a);
		cJSON_free(b);
		jwt_free(&part);
		jwt_free(&full);
	} else if (jwt_parse_claims(&part, (const char *)data, size, err,
	    sizeof(err)) == 0) {
		jwt_free(&part);
	}
	return 0;
}
