/* test_sign.c - Ed25519 keys, key ids, signatures and keyrings */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sign.h"

struct paths {
	char dir[64];
	char key[96];
	char pub[96];
};

static void
mkpaths(struct paths *p)
{
	cr_assert(snprintf(p->dir, sizeof(p->dir), "/tmp/test_sign_XXXXXX") > 0);
	cr_assert_not_null(mkdtemp(p->dir));
	cr_assert(snprintf(p->key, sizeof(p->key), "%s/key.pem", p->dir) > 0);
	cr_assert(snprintf(p->pub, sizeof(p->pub), "%s/pub.pem", p->dir) > 0);
}

static void
rmpaths(struct paths *p)
{
	unlink(p->key);
	unlink(p->pub);
	rmdir(p->dir);
}

Test(sign, save_load_sign_verify)
{
	struct paths p;
	EVP_PKEY *key, *priv, *pub;
	unsigned char id1[SIGN_KEYID_LEN], id2[SIGN_KEYID_LEN], sig[SIGN_SIG_LEN];
	char err[256];
	struct stat st;
	const char msg[] = "revcheck";

	mkpaths(&p);
	key = sign_keygen();
	cr_assert_not_null(key);
	cr_assert_eq(sign_save(key, p.key, p.pub, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(stat(p.key, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(stat(p.pub, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644);

	priv = sign_load_private(p.key, err, sizeof(err));
	cr_assert_not_null(priv, "%s", err);
	pub = sign_load_public(p.pub, err, sizeof(err));
	cr_assert_not_null(pub, "%s", err);
	cr_assert_null(sign_load_private(p.pub, err, sizeof(err)));
	cr_assert(strstr(err, p.pub) != NULL);

	cr_assert_eq(sign_key_id(key, id1), 0);
	cr_assert_eq(sign_key_id(pub, id2), 0);
	cr_assert_eq(memcmp(id1, id2, sizeof(id1)), 0);

	cr_assert_eq(sign_sign(priv, msg, sizeof(msg), sig), 0);
	cr_assert(sign_verify(pub, msg, sizeof(msg), sig));
	cr_assert_not(sign_verify(pub, msg, sizeof(msg) - 1, sig));
	sig[10] ^= 1;
	cr_assert_not(sign_verify(pub, msg, sizeof(msg), sig));
	/* A public key cannot sign. */
	cr_assert_eq(sign_sign(pub, msg, sizeof(msg), sig), -1);

	EVP_PKEY_free(key);
	EVP_PKEY_free(priv);
	EVP_PKEY_free(pub);
	rmpaths(&p);
}

Test(sign, never_overwrites_without_force)
{
	struct paths p;
	EVP_PKEY *a, *b, *l;
	unsigned char ida[SIGN_KEYID_LEN], idb[SIGN_KEYID_LEN], idl[SIGN_KEYID_LEN];
	char err[256];
	struct stat st;

	mkpaths(&p);
	a = sign_keygen();
	b = sign_keygen();
	cr_assert_eq(sign_save(a, p.key, NULL, false, err, sizeof(err)), 0);
	cr_assert_eq(sign_save(b, p.key, NULL, false, err, sizeof(err)), -1);
	cr_assert(strstr(err, "already exists") != NULL, "%s", err);
	l = sign_load_private(p.key, err, sizeof(err));
	cr_assert_eq(sign_key_id(a, ida), 0);
	cr_assert_eq(sign_key_id(l, idl), 0);
	cr_assert_eq(memcmp(ida, idl, 32), 0, "the old key is intact");
	EVP_PKEY_free(l);

	cr_assert_eq(sign_save(b, p.key, NULL, true, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(stat(p.key, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	l = sign_load_private(p.key, err, sizeof(err));
	cr_assert_eq(sign_key_id(b, idb), 0);
	cr_assert_eq(sign_key_id(l, idl), 0);
	cr_assert_eq(memcmp(idb, idl, 32), 0);
	EVP_PKEY_free(l);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
	rmpaths(&p);
}

Test(sign, rejects_non_ed25519_and_garbage)
{
	struct paths p;
	FILE *fp;
	char err[256];
	EVP_PKEY *rsa;

	mkpaths(&p);
	fp = fopen(p.key, "w");
	cr_assert_not_null(fp);
	fputs("-----BEGIN PRIVATE KEY-----\nnot base64!\n"
	    "-----END PRIVATE KEY-----\n", fp);
	fclose(fp);
	cr_assert_null(sign_load_private(p.key, err, sizeof(err)));
	cr_assert_null(sign_load_public(p.key, err, sizeof(err)));
	cr_assert_null(sign_load_private("/nonexistent/key.pem", err,
	    sizeof(err)));
	cr_assert(strstr(err, "/nonexistent/key.pem") != NULL);

	rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	cr_assert_not_null(rsa);
	cr_assert_eq(sign_save(rsa, p.pub, NULL, false, err, sizeof(err)), -1);
	cr_assert(strstr(err, "Ed25519") != NULL, "%s", err);
	EVP_PKEY_free(rsa);
	rmpaths(&p);
}

Test(sign, ring_finds_by_id)
{
	struct paths p;
	struct sign_ring r;
	EVP_PKEY *key;
	unsigned char id[SIGN_KEYID_LEN];
	char err[256];

	mkpaths(&p);
	key = sign_keygen();
	cr_assert_eq(sign_save(key, p.key, p.pub, false, err, sizeof(err)), 0);
	sign_ring_init(&r);
	cr_assert_eq(sign_ring_add(&r, p.pub, err, sizeof(err)), 0);
	cr_assert_eq(sign_ring_add(&r, p.pub, err, sizeof(err)), 0);
	cr_assert_eq(r.n, 1, "the same key twice is one entry");
	cr_assert_eq(sign_key_id(key, id), 0);
	cr_assert_not_null(sign_ring_find(&r, id));
	id[0] ^= 1;
	cr_assert_null(sign_ring_find(&r, id));
	cr_assert_eq(sign_ring_add(&r, "/nonexistent.pem", err, sizeof(err)), -1);
	sign_ring_free(&r);
	EVP_PKEY_free(key);
	rmpaths(&p);
}

Test(sign, private_key_refused_as_trusted_key)
{
	struct paths p;
	struct sign_ring r;
	EVP_PKEY *key;
	char err[256];

	mkpaths(&p);
	key = sign_keygen();
	cr_assert_not_null(key);
	cr_assert_eq(sign_save(key, p.key, p.pub, false, err, sizeof(err)), 0,
	    "%s", err);
	EVP_PKEY_free(key);
	cr_assert_null(sign_load_public(p.key, err, sizeof(err)));
	cr_assert(strstr(err, "private key") != NULL, "%s", err);
	cr_assert(strstr(err, p.key) != NULL, "%s", err);
	sign_ring_init(&r);
	cr_assert_eq(sign_ring_add(&r, p.key, err, sizeof(err)), -1);
	cr_assert(strstr(err, "private key") != NULL, "%s", err);
	cr_assert_eq(r.n, 0);
	cr_assert_eq(sign_ring_add(&r, p.pub, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.n, 1);
	sign_ring_free(&r);
	rmpaths(&p);
}
