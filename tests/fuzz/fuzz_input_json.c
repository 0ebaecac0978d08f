/* fuzz_input_json.c - JSON revocation lists (arrays of ids or objects) from untrusted bytes */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input_one(data, size, "default", INPUT_JSON);
	/* Auto-detection too, so sniffing meets the same bytes. */
	fuzz_input_one(data, size, FUZZ_ZERO_SCOPE, INPUT_AUTO);
	return 0;
}
