/* ocsp_int.h - what ocsp.c and ocsp_sign.c share: a responder's loaded parts, and what signing precomputes */
#ifndef REVCHECK_OCSP_INT_H
#define REVCHECK_OCSP_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "ocsp.h"

/* The CertID hashes matched: SHA-1, SHA-256, SHA-384, SHA-512. */
#define OCSP_NHASH	4

struct ocsp_responder {
	X509		*ca;
	X509		*cert;		/* the signer: ca itself, or delegated */
	EVP_PKEY	*key;
	const EVP_MD	*md;		/* NULL for Ed25519 */
	bool		 self;		/* cert is the CA's own */
	unsigned char	 name_hash[OCSP_NHASH][EVP_MAX_MD_SIZE];
	unsigned char	 key_hash[OCSP_NHASH][EVP_MAX_MD_SIZE];
	unsigned	 hash_len[OCSP_NHASH];
	char		 name[256];
	/*
	 * What every response signed by it shares, encoded once at load
	 * (ocsp_sign_prepare): the responderID (byKey), the signature's
	 * AlgorithmIdentifier, the certs field ([0] holding cert; empty when
	 * it is the CA's own) and a signing context copied per signature
	 * (NULL when the key's context cannot be copied: made per call).
	 */
	unsigned char	 respid[24];
	unsigned char	*sigalg;
	size_t		 sigalg_len;
	unsigned char	*certs;
	size_t		 certs_len;
	EVP_MD_CTX	*tmpl;
};

/*
 * Encodes r's shared parts (above). 0, or -1 with err; what was made is
 * freed by ocsp_sign_release.
 */
int ocsp_sign_prepare(struct ocsp_responder *r, char *err, size_t errlen);

/* Frees what ocsp_sign_prepare made. Safe on a responder without it. */
void ocsp_sign_release(struct ocsp_responder *r);

#endif
