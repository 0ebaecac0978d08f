/* fuzz_ffile.c - the signed filter file parser and verifier on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ffile.h"
#include "sign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static EVP_PKEY *fuzz_pub;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ffile_info *info;
	struct revkey k;
	struct ffile *f;
	char err[512], path[4096];
	const char *src;

	if (fuzz_pub == NULL && (src = getenv("REVCHECK_SRC")) != NULL) {
		snprintf(path, sizeof(path), "%s/tests/vectors/pub.pem", src);
		fuzz_pub = sign_load_public(path, err, sizeof(err));
	}
	f = ffile_parse(data, size, false, err, sizeof(err));
	if (f == NULL)
		return 0;
	info = ffile_info(f);
	if (fuzz_pub != NULL)
		(void)ffile_verify_key(f, fuzz_pub, err, sizeof(err));
	if (info->nscopes > 0 && revkey_set(&k, info->scopes[0].name, "x", 1) == 0)
		(void)ffile_query(f, &k);
	(void)ffile_scope(f, "default");
	ffile_close(f);
	return 0;
}
