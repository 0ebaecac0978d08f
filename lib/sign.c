/* sign.c - Ed25519 signing keys, key ids, and trusted keyrings (OpenSSL EVP) */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "publish.h"
#include "sign.h"
#include "util.h"

/* Both PEM key files are small; anything bigger is not a key. */

static void
sign_errf(char *err, size_t errlen, const char *path, const char *what)
{
	unsigned long e;
	char ebuf[160];

	if (err == NULL || errlen == 0)
		return;
	e = ERR_peek_last_error();
	if (e != 0) {
		ERR_error_string_n(e, ebuf, sizeof(ebuf));
		(void)snprintf(err, errlen, "%s: %s (%s)", path, what, ebuf);
	} else {
		(void)snprintf(err, errlen, "%s: %s", path, what);
	}
	ERR_clear_error();
}

EVP_PKEY *
sign_keygen(void)
{
	EVP_PKEY_CTX *ctx;
	EVP_PKEY *key = NULL;

	ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	if (ctx == NULL)
		return NULL;
	if (EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_keygen(ctx, &key) <= 0)
		key = NULL;
	EVP_PKEY_CTX_free(ctx);
	return key;
}

static bool
sign_is_ed25519(EVP_PKEY *key)
{
	return key != NULL && EVP_PKEY_get_id(key) == EVP_PKEY_ED25519;
}

/*
 * Writes the key's PEM as path with the given mode (publish_path): a new
 * file unless force, which replaces an existing one; a crash never leaves
 * a half-written key under either name.
 */
static int
sign_write_pem(EVP_PKEY *key, bool private, const char *path, mode_t mode,
    bool force, char *err, size_t errlen)
{
	BIO *mem = NULL;
	char *data;
	long len;
	int rc = -1;

	mem = BIO_new(BIO_s_mem());
	if (mem == NULL) {
		sign_errf(err, errlen, path, "out of memory");
		return -1;
	}
	if (private) {
		if (!PEM_write_bio_PrivateKey(mem, key, NULL, NULL, 0, NULL,
		    NULL)) {
			sign_errf(err, errlen, path, "cannot encode private key");
			goto out_free_bio;
		}
	} else if (!PEM_write_bio_PUBKEY(mem, key)) {
		sign_errf(err, errlen, path, "cannot encode public key");
		goto out_free_bio;
	}
	len = BIO_get_mem_data(mem, &data);
	if (len <= 0) {
		sign_errf(err, errlen, path, "cannot encode key");
		goto out_free_bio;
	}

	if (publish_path(path, data, (size_t)len, mode, force ? 0 :
	    PUBLISH_EXCL, err, errlen) != 0) {
		if (errno == EEXIST && !force)
			sign_errf(err, errlen, path,
			    "already exists (use --force to replace it)");
		goto out_free_bio;
	}
	rc = 0;
out_free_bio:
	/* The memory BIO held the private key in PEM form. */
	if (private) {
		len = BIO_get_mem_data(mem, &data);
		if (len > 0)
			OPENSSL_cleanse(data, (size_t)len);
	}
	BIO_free(mem);
	return rc;
}

int
sign_save(EVP_PKEY *key, const char *path, const char *pubpath, bool force,
    char *err, size_t errlen)
{
	assert(key != NULL && path != NULL);
	if (!sign_is_ed25519(key)) {
		sign_errf(err, errlen, path, "not an Ed25519 key");
		return -1;
	}
	if (!force && pubpath != NULL && access(pubpath, F_OK) == 0) {
		sign_errf(err, errlen, pubpath,
		    "already exists (use --force to replace it)");
		return -1;
	}
	if (sign_write_pem(key, true, path, 0600, force, err, errlen) != 0)
		return -1;
	if (pubpath != NULL &&
	    sign_write_pem(key, false, pubpath, 0644, force, err, errlen) != 0)
		return -1;
	return 0;
}

/*
 * Reads a small PEM file into buf (SIGN_PEM_MAX bytes), *st from fstat of
 * the descriptor read. Returns the length, or -1 with err. The caller
 * wipes buf.
 */
static long
sign_read_pem(const char *path, unsigned char *buf, struct stat *st,
    char *err, size_t errlen)
{
	FILE *fp;
	size_t n;

	fp = fopen(path, "rb");
	if (fp == NULL || fstat(fileno(fp), st) != 0) {
		sign_errf(err, errlen, path, strerror(errno));
		if (fp != NULL)
			(void)fclose(fp);
		return -1;
	}
	n = fread(buf, 1, SIGN_PEM_MAX + 1, fp);
	if (ferror(fp)) {
		sign_errf(err, errlen, path, "read error");
		(void)fclose(fp);
		return -1;
	}
	(void)fclose(fp);
	if (n > SIGN_PEM_MAX) {
		sign_errf(err, errlen, path, "too large for a key file");
		return -1;
	}
	return (long)n;
}

static EVP_PKEY *
sign_parse_pem(const unsigned char *buf, long len, bool private)
{
	BIO *bio;
	EVP_PKEY *key;

	bio = BIO_new_mem_buf(buf, (int)len);
	if (bio == NULL)
		return NULL;
	if (private)
		key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	else
		key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	BIO_free(bio);
	return key;
}

/* Parses a PEM key of len bytes from buf; path names it in err. */
static EVP_PKEY *
sign_load_buf(const unsigned char *buf, long len, const char *path,
    bool private, char *err, size_t errlen)
{
	EVP_PKEY *key;

	key = sign_parse_pem(buf, len, private);
	if (key == NULL && !private) {
		/*
		 * A private key where a public one belongs is refused, not
		 * used for its public half: it means the secret was copied
		 * to a machine that only verifies.
		 */
		ERR_clear_error();
		key = sign_parse_pem(buf, len, true);
		if (key != NULL) {
			EVP_PKEY_free(key);
			sign_errf(err, errlen, path, "is a private key; give "
			    "the public key (filterbuild keygen --pub)");
			return NULL;
		}
		ERR_clear_error();
	}
	if (key == NULL) {
		sign_errf(err, errlen, path, private ? "not a PEM private key" :
		    "not a PEM public key");
		return NULL;
	}
	if (!sign_is_ed25519(key)) {
		EVP_PKEY_free(key);
		sign_errf(err, errlen, path, "not an Ed25519 key");
		return NULL;
	}
	return key;
}

static EVP_PKEY *
sign_load(const char *path, bool private, char *err, size_t errlen)
{
	unsigned char buf[SIGN_PEM_MAX + 1];
	EVP_PKEY *key = NULL;
	struct stat st;
	long len;

	assert(path != NULL);
	len = sign_read_pem(path, buf, &st, err, errlen);
	if (len >= 0)
		key = sign_load_buf(buf, len, path, private, err, errlen);
	OPENSSL_cleanse(buf, sizeof(buf));
	/* A private key is a secret: the rule revcheckd applies to its own. */
	if (key != NULL && private && util_file_trusted(path, &st, 0, false,
	    true, "this process's", err, errlen) == -1) {
		EVP_PKEY_free(key);
		key = NULL;
	}
	return key;
}

EVP_PKEY *
sign_load_private(const char *path, char *err, size_t errlen)
{
	return sign_load(path, true, err, errlen);
}

EVP_PKEY *
sign_load_public(const char *path, char *err, size_t errlen)
{
	return sign_load(path, false, err, errlen);
}

int
sign_key_id(EVP_PKEY *key, unsigned char id[SIGN_KEYID_LEN])
{
	unsigned char raw[32];
	size_t rawlen = sizeof(raw);

	if (!sign_is_ed25519(key))
		return -1;
	if (EVP_PKEY_get_raw_public_key(key, raw, &rawlen) != 1 ||
	    rawlen != sizeof(raw)) {
		ERR_clear_error();
		return -1;
	}
	return util_sha256(id, raw, rawlen);
}

int
sign_sign(EVP_PKEY *key, const void *msg, size_t len,
    unsigned char sig[SIGN_SIG_LEN])
{
	EVP_MD_CTX *ctx;
	size_t siglen = SIGN_SIG_LEN;
	int rc = -1;

	if (!sign_is_ed25519(key))
		return -1;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return -1;
	if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 &&
	    siglen == SIGN_SIG_LEN)
		rc = 0;
	EVP_MD_CTX_free(ctx);
	if (rc != 0)
		ERR_clear_error();
	return rc;
}

bool
sign_verify(EVP_PKEY *key, const void *msg, size_t len,
    const unsigned char sig[SIGN_SIG_LEN])
{
	EVP_MD_CTX *ctx;
	bool ok = false;

	if (!sign_is_ed25519(key))
		return false;
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return false;
	if (EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestVerify(ctx, sig, SIGN_SIG_LEN, msg, len) == 1)
		ok = true;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

void
sign_ring_init(struct sign_ring *r)
{
	assert(r != NULL);
	memset(r, 0, sizeof(*r));
}

/* Adds key (taken over) to r; path names it in err. */
static int
ring_take(struct sign_ring *r, EVP_PKEY *key, const char *path, char *err,
    size_t errlen)
{
	unsigned char id[SIGN_KEYID_LEN];

	if (sign_key_id(key, id) != 0) {
		EVP_PKEY_free(key);
		sign_errf(err, errlen, path, "cannot compute key id");
		return -1;
	}
	if (sign_ring_find(r, id) != NULL) {
		/* The same key twice is harmless. */
		EVP_PKEY_free(key);
		return 0;
	}
	r->keys[r->n] = key;
	memcpy(r->ids[r->n], id, SIGN_KEYID_LEN);
	r->n++;
	return 0;
}

int
sign_ring_add(struct sign_ring *r, const char *pubpath, char *err,
    size_t errlen)
{
	EVP_PKEY *key;

	assert(r != NULL && pubpath != NULL);
	if (r->n >= SIGN_RING_MAX) {
		sign_errf(err, errlen, pubpath, "too many trusted keys");
		return -1;
	}
	if ((key = sign_load_public(pubpath, err, errlen)) == NULL)
		return -1;
	return ring_take(r, key, pubpath, err, errlen);
}

int
sign_ring_add_pem(struct sign_ring *r, const unsigned char *pem, size_t len,
    const char *name, char *err, size_t errlen)
{
	EVP_PKEY *key;

	assert(r != NULL && pem != NULL && name != NULL);
	if (r->n >= SIGN_RING_MAX) {
		sign_errf(err, errlen, name, "too many trusted keys");
		return -1;
	}
	if (len > SIGN_PEM_MAX) {
		sign_errf(err, errlen, name, "too large for a key file");
		return -1;
	}
	if ((key = sign_load_buf(pem, (long)len, name, false, err,
	    errlen)) == NULL)
		return -1;
	return ring_take(r, key, name, err, errlen);
}

int
sign_ring_add_key(struct sign_ring *r, EVP_PKEY *key)
{
	char err[128];

	assert(r != NULL && key != NULL);
	if (r->n >= SIGN_RING_MAX || EVP_PKEY_up_ref(key) != 1)
		return -1;
	return ring_take(r, key, "key", err, sizeof(err));
}

EVP_PKEY *
sign_ring_find(const struct sign_ring *r, const unsigned char id[SIGN_KEYID_LEN])
{
	size_t i;

	assert(r != NULL && id != NULL);
	for (i = 0; i < r->n; i++)
		if (memcmp(r->ids[i], id, SIGN_KEYID_LEN) == 0)
			return r->keys[i];
	return NULL;
}

void
sign_ring_untrusted(const struct sign_ring *r,
    const unsigned char id[SIGN_KEYID_LEN], char *err, size_t errlen)
{
	char hex[2 * SIGN_KEYID_LEN + 1], list[SIGN_RING_MAX *
	    (2 * SIGN_KEYID_LEN + 2) + 1];
	size_t i, o = 0;

	list[0] = '\0';
	for (i = 0; i < r->n && i < SIGN_RING_MAX; i++) {
		util_hex(hex, r->ids[i], SIGN_KEYID_LEN);
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
		    i > 0 ? ", " : "", hex);
	}
	util_hex(hex, id, SIGN_KEYID_LEN);
	if (r->n == 0)
		util_errf(err, errlen, "signer %s not trusted (no key is "
		    "trusted)", hex);
	else
		util_errf(err, errlen, "signer %s not trusted (trusted: %s)",
		    hex, list);
}

void
sign_ring_free(struct sign_ring *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n; i++)
		EVP_PKEY_free(r->keys[i]);
	memset(r, 0, sizeof(*r));
}
