/* fuzz_checkbody.c - POST /v1/check bodies (one check or a batch) parsed, checked and rendered as the handler does */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "checkio.h"
#include "ffile.h"
#include "log.h"
#include "server.h"
#include "sbuf.h"
#include "sign.h"
#include "snapshot.h"
#include "table.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The daemon's default max_batch. */
#define FUZZ_MAX_BATCH	10000

/* The committed vector pair, verified (REVCHECK_SRC or the current directory). */
static struct snapshot *snap;
/* Tokens are only decoded: verification has its own tests (test_jwt). */
static struct trust fuzz_trust = { .revocation_only = true };

static struct ffile *
load_filter(const char *src)
{
	char path[4096], err[512];
	EVP_PKEY *pub;
	struct ffile *f;
	int n;

	n = snprintf(path, sizeof(path), "%s/tests/vectors/pub.pem", src);
	if (n < 0 || (size_t)n >= sizeof(path) ||
	    (pub = sign_load_public(path, err, sizeof(err))) == NULL)
		return NULL;
	n = snprintf(path, sizeof(path), "%s/tests/vectors/filter.rcf", src);
	f = n < 0 || (size_t)n >= sizeof(path) ? NULL :
	    ffile_open(path, err, sizeof(err));
	if (f != NULL && ffile_verify_key(f, pub, err, sizeof(err)) != 0) {
		ffile_close(f);
		f = NULL;
	}
	EVP_PKEY_free(pub);
	return f;
}

static void
release_snap(void)
{
	snapshot_release(snap);
	snap = NULL;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[4096], err[512];
	struct ffile *f;
	struct table *t;
	int n;

	(void)argc;
	(void)argv;
	log_init("fuzz_checkbody", LOG_LVL_ERR);
	if (src == NULL)
		src = ".";	/* make runs the fuzzers from the top */
	n = snprintf(path, sizeof(path), "%s/tests/vectors/table.rct", src);
	if ((f = load_filter(src)) == NULL || n < 0 ||
	    (size_t)n >= sizeof(path) ||
	    (t = table_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "fuzz_checkbody: cannot load tests/vectors "
		    "(set REVCHECK_SRC)\n");
		abort();
	}
	if ((snap = snapshot_new(f, t, util_now())) == NULL)
		abort();
	atexit(release_snap);
	return 0;
}

/* One key as the handler answers it; a table settles every positive. */
static void
answer(struct sbuf *b, const struct revkey *k)
{
	struct check_result res;

	if (k->id_len == 0 || k->id_len > REVKEY_ID_MAX ||
	    !revkey_scope_valid(k->scope, k->scope_len))
		abort();
	if (check_key(snap, k, &res) != 0)
		abort();	/* an origin never needs the authority */
	checkio_render(b, snap, k, &res);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const cJSON *items, *it;
	const char *why = NULL;
	struct revkey k;
	enum jwt_verdict jv;
	struct sbuf b;
	cJSON *root, *out;
	char e[300], *text;
	size_t len, i = 0;

	if ((root = checkio_parse_body((const char *)data, size, &why)) ==
	    NULL) {
		if (why == NULL)
			abort();
		return 0;
	}
	if (!cJSON_IsObject(root))
		abort();
	sbuf_init(&b, 256, 0);
	items = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (items != NULL) {
		if (!cJSON_IsArray(items) ||
		    cJSON_GetArraySize(items) > FUZZ_MAX_BATCH)
			goto out;
		sbuf_adds(&b, "{\"filter_version\":1,\"results\":[");
		cJSON_ArrayForEach(it, items) {
			if (i++ > 0)
				sbuf_adds(&b, ",");
			e[0] = '\0';
			if (checkio_key_from_json(it, &fuzz_trust, &k, &jv, e,
			    sizeof(e)) == -1) {
				if (e[0] == '\0')
					abort();
				server_render_error(&b, "bad_request", e);
			} else
				answer(&b, &k);
		}
		sbuf_adds(&b, "]}");
	} else {
		e[0] = '\0';
		if (checkio_key_from_json(root, &fuzz_trust, &k, &jv, e,
		    sizeof(e)) == -1) {
			if (e[0] == '\0')
				abort();
			server_render_error(&b, "bad_request", e);
		} else
			answer(&b, &k);
	}
	/* Whatever came in, what goes out is one valid JSON object. */
	if ((text = sbuf_take(&b, &len)) == NULL)
		abort();
	if (!util_utf8_valid(text, len) ||
	    (out = cJSON_ParseWithLength(text, len)) == NULL ||
	    !cJSON_IsObject(out))
		abort();
	cJSON_Delete(out);
	free(text);
out:
	sbuf_free(&b);
	cJSON_Delete(root);
	return 0;
}
