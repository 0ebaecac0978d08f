/* crl.h - RFC 5280 CRL validity: critical extensions, signature algorithm, signer */
#ifndef REVCHECK_CRL_H
#define REVCHECK_CRL_H

#include <stdbool.h>
#include <stddef.h>
#include <openssl/x509.h>

#include "ffile.h"
#include "revkey.h"

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
 * SHA-256 over what a CRL says, all of its tbsCertList but the signature
 * algorithm: version, issuer, thisUpdate, nextUpdate, every entry (serial,
 * date, entry extensions) and the CRL's extensions, as encoded in der
 * (len bytes, a whole CertificateList). Two CRLs with the same digest say
 * the same thing, signed two ways. Every length is checked against the
 * bytes before it is used. Returns 0, or -1 for DER it cannot walk (out
 * unset).
 */
int crl_content_digest(const unsigned char *der, size_t len,
    unsigned char out[32]);

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
 * certificates, to a self-signed one among them: when a CA certificate
 * with the CRL's issuer Name is among them, to the anchor of such a CA
 * (RFC 5280 section 6.3.3 (f)), not to another CA's.
 *
 * Returns 0 with *signer (borrowed from certs) and *separate set; 1 when
 * no certificate names the CRL's issuer (nothing to verify against); -1
 * with why when a candidate exists but none is acceptable.
 */
int crl_find_signer(X509_CRL *crl, X509 *const *certs, size_t ncerts,
    X509 **signer, bool *separate, char *why, size_t whylen);

/*
 * Reads the CRL's issuingDistributionPoint into sc's coverage parts: none
 * when it has none (the CRL covers its issuer whole); otherwise one part
 * per distribution point name (or one without a name) with the kind of
 * certificates (onlyContainsUserCerts / onlyContainsCACerts) and the
 * reasons (onlySomeReasons) it covers, each naming the CRL (its issuer's
 * scope hash and sc's crl_number and this_update, which the caller sets
 * first). *indirect is set for an indirect CRL (indirectCRL): its parts
 * carry FFILE_PART_INDIRECT. Returns 0, or -1 with why for what is
 * refused: a malformed extension, onlyContainsAttributeCerts (covers no
 * public-key certificate), both only-flags, or more than FFILE_PART_MAX
 * names.
 */
int crl_idp_parts(X509_CRL *crl, struct ffile_scope *sc, bool *indirect,
    char *why, size_t whylen);

/*
 * True when scope sc by itself answers for key k: a list scope or a CRL
 * scope covered whole always (but never a scope flagged
 * FFILE_SCOPE_ATTRIBUTED without parts: it only holds what an indirect
 * CRL of another issuer listed); a partially covered scope only when the
 * parts that apply to the certificate k was derived from (its kind; a
 * part with a distribution point name only when a distribution point of
 * the certificate without cRLIssuer lists that name, and then only for
 * the reasons that point's reasons field names) cover every reason.
 * A bare id (no certificate) is covered only when the parts without a
 * name cover user and CA certificates for every reason. This function
 * can't fail.
 */
bool crl_key_covered(const struct ffile_scope *sc, const struct revkey *k);

/*
 * The one coverage decision of a check: true when filter ff answers for
 * k. k's own scope answers as crl_key_covered() says; besides, a
 * certificate whose distribution points name a CRL issuer (cRLIssuer) is
 * covered by the indirect CRLs of that issuer in ff: the parts flagged
 * FFILE_PART_INDIRECT in that issuer's scope, of the certificate's kind,
 * without a distribution point name or with one the certificate's
 * distribution point naming that issuer lists (RFC 5280 section 6.3.3
 * (b)), their reasons added to those of its own issuer's partial CRLs.
 * The certificate's own extensions decide, as for every partial CRL: the
 * caller has validated its signature chain. A bare id is never covered
 * through another issuer. This function can't fail.
 */
bool crl_covered(const struct ffile *ff, const struct revkey *k);

/*
 * The same decision over scopes that find returns by name (NULL: not
 * covered), for a set still being built (input_check_signers).
 */
typedef const struct ffile_scope *(*crl_scope_fn)(void *arg,
    const char *name);
bool crl_covered_in(crl_scope_fn find, void *arg, const struct revkey *k);

/*
 * True when the part covers only certificates listing a distribution point
 * name (its dp is not all zeros). Can't fail.
 */
bool crl_part_named(const struct ffile_part *p);

/* "any", "user" or "ca" for a coverage part's kind. Can't fail. */
const char *crl_part_kind_name(uint8_t kind);

/*
 * The ReasonFlags name of bit 1..8 ("keyCompromise" ... "aACompromise"),
 * NULL for another bit. Can't fail.
 */
const char *crl_reason_flag_name(int bit);

/*
 * The Name as RFC 2253 text into out (cap at least 4; cut with "..."
 * when too long). Returns 0, or -1 when it cannot be printed.
 */
int crl_name_text(const X509_NAME *name, char *out, size_t cap);

#endif
