/* fuzz_jwt.c - JWTs from untrusted bytes, as the daemon receives tokens to check */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char enc[REVKEY_ENC_MAX];
	struct revkey k;
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
	return 0;
}
