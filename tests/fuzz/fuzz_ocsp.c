/* fuzz_ocsp.c - OCSP requests (DER, and the base64 of a GET) from untrusted bytes */
#include <stdint.h>
#include <stdlib.h>

#include <openssl/objects.h>

#include "ocsp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A request read whole holds what the responder relies on. */
static void
parse(const unsigned char *der, size_t len)
{
	struct ocsp_req q;
	char err[256];

	if (ocsp_request_parse(&q, der, len, err, sizeof(err)) == 0) {
		if (q.req == NULL || q.id == NULL || q.serial == NULL ||
		    q.nonce_len > OCSP_NONCE_MAX ||
		    (q.has_nonce && q.nonce_len == 0) ||
		    (q.md_nid != NID_sha1 && q.md_nid != NID_sha256 &&
		    q.md_nid != NID_sha384 && q.md_nid != NID_sha512) ||
		    ASN1_STRING_length(q.serial) < 1 ||
		    ASN1_STRING_length(q.serial) > OCSP_SERIAL_MAX)
			abort();
	}
	ocsp_request_free(&q);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char buf[OCSP_REQ_MAX];
	long n;

	/* As a POST body, then as the text of a GET. */
	parse(data, size);
	n = ocsp_b64_decode((const char *)data, size, buf, sizeof(buf));
	if (n > (long)sizeof(buf))
		abort();
	if (n >= 0)
		parse(buf, (size_t)n);
	return 0;
}
