/* fuzz_input_text.c - text revocation lists (one id per line) from untrusted bytes */
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input_one(data, size, "default", INPUT_TEXT);
	fuzz_input_one(data, size, FUZZ_ZERO_SCOPE, INPUT_TEXT);
	return 0;
}
