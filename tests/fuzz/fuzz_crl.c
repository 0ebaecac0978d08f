/* fuzz_crl.c - X.509 CRLs (DER, or one or more PEM blocks) from untrusted bytes */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input_set s;
	size_t i;

	if (fuzz_input_read(&s, data, size, "default", INPUT_CRL) == 0) {
		/* Every CRL read covers an X.509 scope with its metadata. */
		if (s.nscopes == 0)
			abort();
		for (i = 0; i < s.nscopes; i++)
			if (s.scopes[i].source != FFILE_SRC_CRL ||
			    !revkey_scope_is_x509(s.scopes[i].name))
				abort();
	}
	input_set_free(&s);
	return 0;
}
