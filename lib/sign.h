/* sign.h - Ed25519 signing keys, key ids, and trusted keyrings (OpenSSL EVP) */
#ifndef REVCHECK_SIGN_H
#define REVCHECK_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/evp.h>

#define SIGN_SIG_LEN	64	/* Ed25519 signature */
#define SIGN_KEYID_LEN	32	/* SHA-256 of the raw 32-byte public key */
#define SIGN_PEM_MAX	16384	/* bytes of a PEM key file */
#define SIGN_RING_MAX	16

/* A trusted set of public keys (several allow rotation). */
struct sign_ring {
	EVP_PKEY	*keys[SIGN_RING_MAX];
	unsigned char	 ids[SIGN_RING_MAX][SIGN_KEYID_LEN];
	size_t		 n;
};

/* A new Ed25519 key pair, or NULL. The caller owns it (EVP_PKEY_free). */
EVP_PKEY *sign_keygen(void);

/*
 * Writes the private key (PKCS#8 PEM) to path, created with mode 0600;
 * refuses to replace an existing file unless force. With pubpath, also
 * writes the public key (SubjectPublicKeyInfo PEM, mode 0644). Returns 0,
 * or -1 with err naming the file and the reason.
 */
int sign_save(EVP_PKEY *key, const char *path, const char *pubpath,
    bool force, char *err, size_t errlen);

/*
 * Loads an Ed25519 private or public key from a PEM file; NULL with err.
 * sign_load_public() (and so sign_ring_add()) refuses a private key file,
 * which must never sit where only verification happens.
 * sign_load_private() refuses a key file that breaks util_file_trusted's
 * rule for a secret (owned by root or this user, readable by no one
 * else), as revcheckd refuses the files it trusts.
 */
EVP_PKEY *sign_load_private(const char *path, char *err, size_t errlen);
EVP_PKEY *sign_load_public(const char *path, char *err, size_t errlen);

/* Key id of a key (public part). Returns 0, or -1 if not Ed25519. */
int sign_key_id(EVP_PKEY *key, unsigned char id[SIGN_KEYID_LEN]);

/* Signs msg with an Ed25519 private key into sig[64]. 0 or -1. */
int sign_sign(EVP_PKEY *key, const void *msg, size_t len,
    unsigned char sig[SIGN_SIG_LEN]);

/* True only when sig is a valid signature of msg by key. */
bool sign_verify(EVP_PKEY *key, const void *msg, size_t len,
    const unsigned char sig[SIGN_SIG_LEN]);

/* Ring management. sign_ring_add loads a public key file. 0 or -1. */
void sign_ring_init(struct sign_ring *r);
int sign_ring_add(struct sign_ring *r, const char *pubpath, char *err,
    size_t errlen);
/*
 * sign_ring_add() of a public key held in memory (len bytes of PEM, at
 * most SIGN_PEM_MAX), for a caller that read and checked the file
 * itself; name names it in err. 0, or -1 with err.
 */
int sign_ring_add_pem(struct sign_ring *r, const unsigned char *pem,
    size_t len, const char *name, char *err, size_t errlen);
/*
 * Adds a key the caller holds (a private key verifies as its public
 * part): the ring takes its own reference, the caller keeps its own. A
 * key already in the ring is not added twice. 0, or -1 (ring unchanged)
 * when the ring is full or the key is not Ed25519.
 */
int sign_ring_add_key(struct sign_ring *r, EVP_PKEY *key);
/*
 * The error of a signer id the ring lacks: "signer ID not trusted
 * (trusted: ID, ID...)" (or "(no key is trusted)") into err, every id in
 * hex, so that the message names the key found and the ones configured.
 * Can't fail (a long list is cut).
 */
void sign_ring_untrusted(const struct sign_ring *r,
    const unsigned char id[SIGN_KEYID_LEN], char *err, size_t errlen);

/* The ring's key with this id, or NULL. */
EVP_PKEY *sign_ring_find(const struct sign_ring *r,
    const unsigned char id[SIGN_KEYID_LEN]);
void sign_ring_free(struct sign_ring *r);

#endif
