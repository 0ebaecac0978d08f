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
	char err[512], path[4096], id[1];
	const char *src;
	uint32_t i, j;

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
	/*
	 * A few lookups in every scope: enough to reach the cells near both
	 * ends of a fuse array, where the packed layout's loads run into
	 * the padding.
	 */
	for (i = 0; i < info->nscopes; i++)
		for (j = 0; j < 16; j++) {
			id[0] = (char)('a' + j);
			if (revkey_set(&k, info->scopes[i].name, id, 1) == 0)
				(void)ffile_query(f, &k);
		}
	(void)ffile_scope(f, "default");
	ffile_close(f);
	return 0;
}
