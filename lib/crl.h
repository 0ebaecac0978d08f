/* crl.h - RFC 5280 CRL validity: critical extensions, signature algorithm, signer */
#ifndef REVCHECK_CRL_H
#define REVCHECK_CRL_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/x509.h>

/*
 * Checks that every critical extension of the CRL and of each entry is
 * one this reader processes (RFC 5280 section 5.2/5.3: a CRL with an
 * unrecognised critical extension must not be used). Known CRL
 * extensions: authorityKeyIdentifier, issuerAltName, cRLNumber,
 * deltaCRLIndicator, issuingDistributionPoint, freshestCRL,
 * authorityInfoAccess; entry extensions: reasonCode, invalidityDate,
 * certificateIssuer, holdInstructionCode. Returns 0, or -1 with why
 * naming the extension's OID (and the entry's index). Can't fail
 * otherwise.
 */
int crl_check_critical(const X509_CRL *crl, char *why, size_t whylen);

/*
 * Refuses a CRL signed with a weak digest (MD2, MD4, MD5, MDC2, SHA-1)
 * unless allow_weak. Returns 0, or -1 with why naming the algorithm.
 */
int crl_check_sigalg(const X509_CRL *crl, bool allow_weak, char *why,
    size_t whylen);

/*
 * Finds which of the given certificates signed the CRL: one whose subject
 * equals the CRL's issuer Name (RFC 5280 section 7.1 comparison) and
 * whose key verifies the CRL's signature. The signer must allow cRLSign
 * when it has a keyUsage extension. A signer that is not itself the CA
 * (a keyUsage without keyCertSign, or no CA basicConstraints), unless
 * it is self-signed (a trust anchor given as such), is a separate CRL
 * signer and is accepted only when it chains, through the given
 * certificates, to a self-signed one among them.
 *
 * Returns 0 with *signer (borrowed from certs) and *separate set; 1 when
 * no certificate names the CRL's issuer (nothing to verify against); -1
 * with why when a candidate exists but none is acceptable.
 */
int crl_find_signer(X509_CRL *crl, X509 *const *certs, size_t ncerts,
    X509 **signer, bool *separate, char *why, size_t whylen);

/*
 * The Name as RFC 2253 text into out (cap at least 4; cut with "..."
 * when too long). Returns 0, or -1 when it cannot be printed.
 */
int crl_name_text(const X509_NAME *name, char *out, size_t cap);

#endif
