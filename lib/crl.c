/* crl.c - RFC 5280 CRL validity: critical extensions, signature algorithm, signer */
/*
 * These checks decide whether a CRL may be used at all. Each refuses
 * rather than guesses: a CRL that cannot be shown to come from its issuer,
 * or that carries a critical extension nobody here understands, defines
 * no scope.
 */
#include "crl.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/rsa.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

/*
 * One DER header at p[0..len): its tag, header length and content length,
 * the content inside len. -1 for a high tag number, an indefinite or
 * over-long length, or content past len.
 */
static int
der_header(const unsigned char *p, size_t len, unsigned char *tag,
    size_t *hlen, size_t *clen)
{
	size_t i, n, l = 0;

	if (len < 2 || (p[0] & 0x1f) == 0x1f)
		return -1;
	*tag = p[0];
	if (p[1] < 0x80) {
		*hlen = 2;
		l = p[1];
	} else {
		n = p[1] & 0x7f;
		if (n == 0 || n > 4 || len - 2 < n)
			return -1;
		for (i = 0; i < n; i++)
			l = l << 8 | p[2 + i];
		*hlen = 2 + n;
	}
	if (l > len - *hlen)
		return -1;
	*clen = l;
	return 0;
}

int
crl_content_digest(const unsigned char *der, size_t len,
    unsigned char out[32])
{
	const unsigned char *t;
	size_t h, c, h1, c1, h2, tlen, vlen = 0, alen;
	unsigned char tag;
	EVP_MD_CTX *md;
	int rc = -1;

	/* CertificateList ::= SEQUENCE { tbsCertList SEQUENCE { ... } ... } */
	if (der_header(der, len, &tag, &h1, &c1) != 0 || tag != 0x30 ||
	    der_header(der + h1, c1, &tag, &h2, &tlen) != 0 || tag != 0x30)
		return -1;
	t = der + h1 + h2;
	/* version INTEGER OPTIONAL, then signature AlgorithmIdentifier. */
	if (der_header(t, tlen, &tag, &h, &c) != 0)
		return -1;
	if (tag == 0x02) {
		vlen = h + c;
		if (der_header(t + vlen, tlen - vlen, &tag, &h, &c) != 0)
			return -1;
	}
	if (tag != 0x30)
		return -1;
	alen = h + c;
	if ((md = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(md, t, vlen) == 1 &&
	    EVP_DigestUpdate(md, t + vlen + alen, tlen - vlen - alen) == 1 &&
	    EVP_DigestFinal_ex(md, out, NULL) == 1)
		rc = 0;
	EVP_MD_CTX_free(md);
	return rc;
}

/* Writes the OID of ext's object in dotted form into out. */
static void
ext_oid(const X509_EXTENSION *ext, char *out, size_t cap)
{
	if (OBJ_obj2txt(out, (int)cap, X509_EXTENSION_get_object(
	    (X509_EXTENSION *)(uintptr_t)ext), 1) <= 0)
		(void)snprintf(out, cap, "?");
}

static bool
nid_in(int nid, const int *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (list[i] == nid)
			return true;
	return false;
}

int
crl_check_critical(const X509_CRL *crl, char *why, size_t whylen)
{
	static const int crl_known[] = {
		NID_authority_key_identifier, NID_issuer_alt_name,
		NID_crl_number, NID_delta_crl, NID_issuing_distribution_point,
		NID_freshest_crl, NID_info_access,
	};
	static const int entry_known[] = {
		NID_crl_reason, NID_invalidity_date, NID_certificate_issuer,
		NID_hold_instruction_code,
	};
	STACK_OF(X509_REVOKED) *revs;
	const X509_EXTENSION *ext;
	const X509_REVOKED *ent;
	char oid[128];
	int i, j, n, m;

	n = X509_CRL_get_ext_count(crl);
	for (i = 0; i < n; i++) {
		ext = X509_CRL_get_ext(crl, i);
		if (!X509_EXTENSION_get_critical(ext) || nid_in(OBJ_obj2nid(
		    X509_EXTENSION_get_object((X509_EXTENSION *)(uintptr_t)ext)),
		    crl_known, sizeof(crl_known) / sizeof(crl_known[0])))
			continue;
		ext_oid(ext, oid, sizeof(oid));
		(void)snprintf(why, whylen, "unknown critical CRL extension %s: "
		    "the CRL must not be used (RFC 5280 section 5.2)", oid);
		return -1;
	}
	revs = X509_CRL_get_REVOKED((X509_CRL *)(uintptr_t)crl);
	m = revs != NULL ? sk_X509_REVOKED_num(revs) : 0;
	for (j = 0; j < m; j++) {
		ent = sk_X509_REVOKED_value(revs, j);
		n = X509_REVOKED_get_ext_count(ent);
		for (i = 0; i < n; i++) {
			ext = X509_REVOKED_get_ext(ent, i);
			if (!X509_EXTENSION_get_critical(ext) ||
			    nid_in(OBJ_obj2nid(X509_EXTENSION_get_object(
			    (X509_EXTENSION *)(uintptr_t)ext)), entry_known,
			    sizeof(entry_known) / sizeof(entry_known[0])))
				continue;
			ext_oid(ext, oid, sizeof(oid));
			(void)snprintf(why, whylen, "entry %d: unknown critical "
			    "CRL entry extension %s: the CRL must not be used "
			    "(RFC 5280 section 5.3)", j, oid);
			return -1;
		}
	}
	return 0;
}

static const int weak_md[] = {
	NID_md2, NID_md4, NID_md5, NID_mdc2, NID_sha1,
};

/*
 * The digests of an RSASSA-PSS signature (RFC 4055 section 3.1) from its
 * AlgorithmIdentifier: *md the message hash, *mgf_md the MGF1 hash, each
 * SHA-1 when absent (the defaults). Returns 0, or -1 with why when the
 * parameters are missing or cannot be decoded, or name another mask
 * generation function than MGF1 (nothing to judge them by).
 */
static int
pss_digests(const X509_ALGOR *alg, int *md, int *mgf_md, char *why,
    size_t whylen)
{
	const ASN1_OBJECT *obj;
	const void *pval;
	ASN1_TYPE at;
	RSA_PSS_PARAMS *pss = NULL;
	X509_ALGOR *mh = NULL;
	int ptype, rc = -1;

	X509_ALGOR_get0(&obj, &ptype, &pval, alg);
	if (ptype != V_ASN1_SEQUENCE || pval == NULL)
		goto out;
	memset(&at, 0, sizeof(at));
	at.type = V_ASN1_SEQUENCE;
	at.value.sequence = (ASN1_STRING *)(uintptr_t)pval;
	if ((pss = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(RSA_PSS_PARAMS),
	    &at)) == NULL)
		goto out;
	*md = pss->hashAlgorithm == NULL ? NID_sha1 :
	    OBJ_obj2nid(pss->hashAlgorithm->algorithm);
	*mgf_md = NID_sha1;
	if (pss->maskGenAlgorithm != NULL) {
		if (OBJ_obj2nid(pss->maskGenAlgorithm->algorithm) != NID_mgf1 ||
		    (mh = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(X509_ALGOR),
		    pss->maskGenAlgorithm->parameter)) == NULL)
			goto out;
		*mgf_md = OBJ_obj2nid(mh->algorithm);
	}
	rc = 0;
out:
	if (rc != 0)
		(void)snprintf(why, whylen, "signed with RSASSA-PSS whose "
		    "parameters are missing, undecodable or not MGF1: its "
		    "digest cannot be judged, refused");
	X509_ALGOR_free(mh);
	RSA_PSS_PARAMS_free(pss);
	ERR_clear_error();
	return rc;
}

int
crl_check_sigalg(const X509_CRL *crl, bool allow_weak, char *why,
    size_t whylen)
{
	const ASN1_BIT_STRING *psig;
	const X509_ALGOR *alg;
	int sig = X509_CRL_get_signature_nid(crl), md = NID_undef, pk;
	int mgf_md = NID_undef;

	if (allow_weak)
		return 0;
	/*
	 * RSASSA-PSS names its digests in its parameters, not in its OID
	 * (OBJ_find_sigid_algs gives NID_undef): an absent hashAlgorithm is
	 * SHA-1, so they must be read, or a SHA-1 CRL passes as strong.
	 */
	if (sig == NID_rsassaPss) {
		X509_CRL_get0_signature(crl, &psig, &alg);
		if (pss_digests(alg, &md, &mgf_md, why, whylen) != 0)
			return -1;
		if (!nid_in(md, weak_md, sizeof(weak_md) / sizeof(weak_md[0])) &&
		    !nid_in(mgf_md, weak_md, sizeof(weak_md) /
		    sizeof(weak_md[0])))
			return 0;
		(void)snprintf(why, whylen, "signed with RSASSA-PSS with %s "
		    "and MGF1 with %s, a weak digest: refused unless "
		    "--allow-weak-crl-sig", OBJ_nid2sn(md), OBJ_nid2sn(mgf_md));
		return -1;
	}
	if (!OBJ_find_sigid_algs(sig, &md, &pk) ||
	    !nid_in(md, weak_md, sizeof(weak_md) / sizeof(weak_md[0])))
		return 0;
	(void)snprintf(why, whylen, "signed with %s, a weak digest (%s): "
	    "refused unless --allow-weak-crl-sig", OBJ_nid2sn(sig),
	    OBJ_nid2sn(md));
	return -1;
}

int
crl_name_text(const X509_NAME *name, char *out, size_t cap)
{
	BIO *bio;
	char *p;
	long n;

	if ((bio = BIO_new(BIO_s_mem())) == NULL)
		return -1;
	if (X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) < 0) {
		BIO_free(bio);
		return -1;
	}
	n = BIO_get_mem_data(bio, &p);
	if (n < 0)
		n = 0;
	if ((size_t)n >= cap) {
		memcpy(out, p, cap - 4);
		memcpy(out + cap - 4, "...", 4);
	} else {
		memcpy(out, p, (size_t)n);
		out[n] = '\0';
	}
	BIO_free(bio);
	return 0;
}

/*
 * The self-signed certificate among certs (the trust anchors the operator
 * gave) that cert chains to through certs, or NULL; cert itself when it
 * is self-signed.
 */
static X509 *
anchor_of(X509 *cert, X509 *const *certs, size_t ncerts)
{
	STACK_OF(X509) *untrusted = NULL, *chain;
	X509_STORE_CTX *ctx = NULL;
	X509_STORE *store = NULL;
	X509 *top, *anchor = NULL;
	size_t i;
	bool anchors = false;

	if (X509_self_signed(cert, 1) == 1) {
		ERR_clear_error();
		return cert;
	}
	if ((store = X509_STORE_new()) == NULL ||
	    (untrusted = sk_X509_new_null()) == NULL ||
	    (ctx = X509_STORE_CTX_new()) == NULL)
		goto out;
	for (i = 0; i < ncerts; i++) {
		if (certs[i] == NULL || certs[i] == cert)
			continue;
		if (X509_self_signed(certs[i], 1) == 1) {
			if (X509_STORE_add_cert(store, certs[i]) != 1)
				goto out;
			anchors = true;
		} else if (!sk_X509_push(untrusted, certs[i]))
			goto out;
	}
	if (!anchors || X509_STORE_CTX_init(ctx, store, cert, untrusted) != 1 ||
	    X509_verify_cert(ctx) != 1 ||
	    (chain = X509_STORE_CTX_get0_chain(ctx)) == NULL ||
	    sk_X509_num(chain) < 2)
		goto out;
	top = sk_X509_value(chain, sk_X509_num(chain) - 1);
	for (i = 0; i < ncerts && anchor == NULL; i++)
		if (certs[i] != NULL && X509_cmp(certs[i], top) == 0)
			anchor = certs[i];
out:
	X509_STORE_CTX_free(ctx);
	sk_X509_free(untrusted);
	X509_STORE_free(store);
	ERR_clear_error();
	return anchor;
}

/*
 * Whether a separate CRL signer that chains to anchor may sign for the CA
 * named in: RFC 5280 section 6.3.3 (f) wants the trust anchor of the
 * CRL issuer's path to be that of the certificates the CRL is about. When
 * the CA of that Name is among certs (a CA certificate other than the
 * signer), the signer must chain to the anchor of one of them; a signer
 * whose Name no CA certificate has (an indirect CRL issuer) may chain to
 * any.
 */
static bool
signer_anchor_ok(X509 *signer, X509 *anchor, const X509_NAME *in,
    X509 *const *certs, size_t ncerts)
{
	X509 *a;
	size_t i;
	bool ca = false;

	for (i = 0; i < ncerts; i++) {
		if (certs[i] == NULL || certs[i] == signer ||
		    X509_NAME_cmp(X509_get_subject_name(certs[i]), in) != 0 ||
		    X509_check_ca(certs[i]) == 0 ||
		    ((X509_get_extension_flags(certs[i]) & EXFLAG_KUSAGE) != 0 &&
		    (X509_get_key_usage(certs[i]) & KU_KEY_CERT_SIGN) == 0))
			continue;
		ca = true;
		if ((a = anchor_of(certs[i], certs, ncerts)) != NULL &&
		    X509_cmp(a, anchor) == 0)
			return true;
	}
	ERR_clear_error();
	return !ca;
}

int
crl_find_signer(X509_CRL *crl, X509 *const *certs, size_t ncerts,
    X509 **signer, bool *separate, char *why, size_t whylen)
{
	const X509_NAME *in = X509_CRL_get_issuer(crl);
	char subj[256], atext[256];
	X509 *anchor;
	EVP_PKEY *pk;
	uint32_t xf, ku;
	size_t i;
	bool matched = false, sep;

	why[0] = '\0';
	for (i = 0; i < ncerts; i++) {
		if (certs[i] == NULL ||
		    X509_NAME_cmp(X509_get_subject_name(certs[i]), in) != 0)
			continue;
		matched = true;
		if (crl_name_text(X509_get_subject_name(certs[i]), subj,
		    sizeof(subj)) != 0)
			(void)snprintf(subj, sizeof(subj), "?");
		pk = X509_get0_pubkey(certs[i]);
		if (pk == NULL || X509_CRL_verify(crl, pk) != 1) {
			ERR_clear_error();
			if (why[0] == '\0')
				(void)snprintf(why, whylen, "signature does not "
				    "verify against issuer certificate \"%s\"",
				    subj);
			continue;
		}
		xf = X509_get_extension_flags(certs[i]);
		ku = X509_get_key_usage(certs[i]);
		if ((xf & EXFLAG_KUSAGE) != 0 && (ku & KU_CRL_SIGN) == 0) {
			(void)snprintf(why, whylen, "signer certificate \"%s\" "
			    "has a keyUsage without cRLSign (RFC 5280 section "
			    "6.3.3 (f))", subj);
			continue;
		}
		/* A self-signed --issuer is a trust anchor given as such. */
		sep = (((xf & EXFLAG_KUSAGE) != 0 &&
		    (ku & KU_KEY_CERT_SIGN) == 0) ||
		    X509_check_ca(certs[i]) == 0) &&
		    X509_self_signed(certs[i], 0) != 1;
		if (sep && (anchor = anchor_of(certs[i], certs, ncerts)) ==
		    NULL) {
			(void)snprintf(why, whylen, "separate CRL signer \"%s\" "
			    "(not the CA's own key) does not chain to a "
			    "self-signed --issuer certificate: give its chain",
			    subj);
			continue;
		}
		if (sep && !signer_anchor_ok(certs[i], anchor, in, certs,
		    ncerts)) {
			if (crl_name_text(X509_get_subject_name(anchor), atext,
			    sizeof(atext)) != 0)
				(void)snprintf(atext, sizeof(atext), "?");
			(void)snprintf(why, whylen, "separate CRL signer \"%s\" "
			    "chains to \"%s\", not to the trust anchor of the CA "
			    "it signs for (RFC 5280 section 6.3.3 (f))", subj,
			    atext);
			continue;
		}
		*signer = certs[i];
		*separate = sep;
		return 0;
	}
	ERR_clear_error();
	return matched ? -1 : 1;
}

int
crl_idp_parts(X509_CRL *crl, struct ffile_scope *sc, bool *indirect,
    char *why, size_t whylen)
{
	ISSUING_DIST_POINT *idp;
	GENERAL_NAMES *names = NULL;
	struct ffile_part base;
	int crit = 0, i, b, n = 0, rc = -1;

	sc->npart = 0;
	*indirect = false;
	idp = X509_CRL_get_ext_d2i(crl, NID_issuing_distribution_point, &crit,
	    NULL);
	if (idp == NULL) {
		ERR_clear_error();
		if (crit == -1)
			return 0;
		(void)snprintf(why, whylen, "malformed or repeated "
		    "issuingDistributionPoint");
		return -1;
	}
	memset(&base, 0, sizeof(base));
	if (idp->onlyattr > 0) {
		(void)snprintf(why, whylen, "issuingDistributionPoint "
		    "onlyContainsAttributeCerts: the CRL covers no public-key "
		    "certificate");
		goto out;
	}
	/* Each part names the CRL it comes from (input_check_previous). */
	if (revkey_x509_scope_hash(base.crl_issuer, X509_CRL_get_issuer(crl))
	    != 0 || strlen(sc->crl_number) > FFILE_PART_CRLNUM_MAX) {
		(void)snprintf(why, whylen, "cannot encode the CRL issuer or "
		    "CRL number");
		goto out;
	}
	memcpy(base.crl_number, sc->crl_number, strlen(sc->crl_number) + 1);
	base.this_update = sc->this_update;
	if (idp->indirectCRL > 0) {
		base.flags |= FFILE_PART_INDIRECT;
		*indirect = true;
	}
	if (idp->onlyuser > 0 && idp->onlyCA > 0) {
		(void)snprintf(why, whylen, "issuingDistributionPoint with both "
		    "onlyContainsUserCerts and onlyContainsCACerts");
		goto out;
	}
	base.kind = idp->onlyuser > 0 ? FFILE_PART_USER : idp->onlyCA > 0 ?
	    FFILE_PART_CA : FFILE_PART_ANY;
	base.reasons = FFILE_REASONS_ALL;
	if (idp->onlysomereasons != NULL) {
		base.reasons = 0;
		for (b = 1; b <= 8; b++)
			if (ASN1_BIT_STRING_get_bit(idp->onlysomereasons, b))
				base.reasons |= (uint16_t)(1u << b);
		if (base.reasons == 0) {
			(void)snprintf(why, whylen, "issuingDistributionPoint "
			    "onlySomeReasons names no reason");
			goto out;
		}
	}
	if (idp->distpoint == NULL) {
		sc->part[0] = base;
		sc->npart = 1;
		rc = 0;
		goto out;
	}
	if (idp->distpoint->type == 1) {
		if (DIST_POINT_set_dpname(idp->distpoint,
		    X509_CRL_get_issuer(crl)) != 1 ||
		    idp->distpoint->dpname == NULL ||
		    revkey_dp_name_hash(idp->distpoint->dpname, base.dp) != 0) {
			(void)snprintf(why, whylen, "issuingDistributionPoint: "
			    "cannot resolve its nameRelativeToCRLIssuer");
			goto out;
		}
		sc->part[0] = base;
		sc->npart = 1;
		rc = 0;
		goto out;
	}
	names = idp->distpoint->name.fullname;
	n = sk_GENERAL_NAME_num(names);
	if (n <= 0 || n > FFILE_PART_MAX) {
		(void)snprintf(why, whylen, "issuingDistributionPoint with %d "
		    "names (1 to %d)", n, FFILE_PART_MAX);
		goto out;
	}
	for (i = 0; i < n; i++) {
		sc->part[i] = base;
		if (revkey_dp_hash(sk_GENERAL_NAME_value(names, i),
		    sc->part[i].dp) != 0) {
			(void)snprintf(why, whylen, "issuingDistributionPoint: "
			    "cannot encode name %d", i);
			goto out;
		}
	}
	sc->npart = (uint8_t)n;
	rc = 0;
out:
	if (rc != 0) {
		sc->npart = 0;
		*indirect = false;
	}
	ISSUING_DIST_POINT_free(idp);
	ERR_clear_error();
	return rc;
}

static bool
dp_is_zero(const unsigned char dp[32])
{
	size_t i;

	for (i = 0; i < 32; i++)
		if (dp[i] != 0)
			return false;
	return true;
}

bool
crl_part_named(const struct ffile_part *p)
{
	return !dp_is_zero(p->dp);
}

_Static_assert(REVKEY_REASONS_ALL == FFILE_REASONS_ALL,
    "a distribution point's reasons and a part's are the same bits");

/*
 * The reasons for which k's distribution points tagged ci that list the
 * name hash dp look to a CRL of that name (their reasons fields, RFC 5280
 * section 6.3.3 (d)): 0 when none lists it.
 */
static uint16_t
key_names(const struct revkey *k, const unsigned char dp[32], uint8_t ci)
{
	uint16_t mask = 0;
	unsigned i;

	for (i = 0; k != NULL && i < k->ndp; i++)
		if (k->dp_ci[i] == ci && memcmp(k->dp[i], dp, 32) == 0)
			mask |= k->dp_reasons[i];
	return mask;
}

/*
 * The reasons the parts of sc cover for a certificate of kind, with its
 * names (k NULL: a bare id, which lists none). With ci 0 these are the
 * parts of the certificate's own issuer's scope, matched against the
 * names of its distribution points without cRLIssuer; a part matched
 * through a name counts for the reasons of the distribution points
 * listing it too. With ci j + 1, sc
 * is the scope of the CRL issuer k->ci[j]: only parts of its indirect
 * CRLs count, a part with a name only when the distribution point that
 * names that issuer lists the name (RFC 5280 section 6.3.3 (b)).
 */
static uint16_t
parts_reasons(const struct ffile_scope *sc, uint8_t kind,
    const struct revkey *k, uint8_t ci)
{
	uint16_t mask = 0;
	unsigned i;

	for (i = 0; i < sc->npart; i++) {
		const struct ffile_part *p = &sc->part[i];

		if (p->kind != FFILE_PART_ANY && p->kind != kind)
			continue;
		if (ci != 0 && ((p->flags & FFILE_PART_INDIRECT) == 0 ||
		    memcmp(p->crl_issuer, k->ci[ci - 1], 32) != 0))
			continue;
		/*
		 * Through a distribution point with a reasons field, a CRL
		 * counts only for the reasons both name: one the CA publishes
		 * for keyCompromise alone does not list a superseded
		 * certificate, whatever its own onlySomeReasons says.
		 */
		if (!dp_is_zero(p->dp))
			mask |= p->reasons & key_names(k, p->dp, ci);
		else
			mask |= p->reasons;
	}
	return mask;
}

bool
crl_key_covered(const struct ffile_scope *sc, const struct revkey *k)
{
	if (sc->source != FFILE_SRC_CRL)
		return true;
	if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0 && sc->npart == 0)
		return false;
	if (sc->npart == 0)
		return true;
	if ((k->cert & REVKEY_CERT_KNOWN) == 0)
		return parts_reasons(sc, FFILE_PART_USER, NULL, 0) ==
		    FFILE_REASONS_ALL &&
		    parts_reasons(sc, FFILE_PART_CA, NULL, 0) == FFILE_REASONS_ALL;
	return parts_reasons(sc, (k->cert & REVKEY_CERT_CA) != 0 ?
	    FFILE_PART_CA : FFILE_PART_USER, k, 0) == FFILE_REASONS_ALL;
}

bool
crl_covered_in(crl_scope_fn find, void *arg, const struct revkey *k)
{
	const struct ffile_scope *sc, *via;
	char name[REVKEY_X509_SCOPE_LEN + 1];
	uint16_t mask = 0;
	uint8_t kind;
	unsigned j;

	sc = find(arg, k->scope);
	if (sc != NULL && crl_key_covered(sc, k))
		return true;
	if ((k->cert & REVKEY_CERT_KNOWN) == 0 || k->nci == 0)
		return false;
	/*
	 * The certificate names CRL issuers of its own: their indirect CRLs
	 * cover it (with its own issuer's partial CRLs, reasons add up, as
	 * RFC 5280 section 6.3.3 accumulates them over distribution points).
	 */
	kind = (k->cert & REVKEY_CERT_CA) != 0 ? FFILE_PART_CA :
	    FFILE_PART_USER;
	if (sc != NULL && sc->source == FFILE_SRC_CRL && sc->npart > 0)
		mask = parts_reasons(sc, kind, k, 0);
	memcpy(name, REVKEY_X509_PREFIX, sizeof(REVKEY_X509_PREFIX) - 1);
	for (j = 0; j < k->nci && j < REVKEY_CI_MAX; j++) {
		util_hex(name + sizeof(REVKEY_X509_PREFIX) - 1, k->ci[j], 32);
		via = find(arg, name);
		if (via != NULL && via->source == FFILE_SRC_CRL)
			mask |= parts_reasons(via, kind, k, (uint8_t)(j + 1));
	}
	return mask == FFILE_REASONS_ALL;
}

static const struct ffile_scope *
ff_find(void *arg, const char *name)
{
	return ffile_scope(arg, name);
}

bool
crl_covered(const struct ffile *ff, const struct revkey *k)
{
	return crl_covered_in(ff_find, (void *)(uintptr_t)ff, k);
}

const char *
crl_part_kind_name(uint8_t kind)
{
	return kind == FFILE_PART_USER ? "user" : kind == FFILE_PART_CA ? "ca" :
	    "any";
}

const char *
crl_reason_flag_name(int bit)
{
	static const char *const names[] = {
		NULL, "keyCompromise", "cACompromise", "affiliationChanged",
		"superseded", "cessationOfOperation", "certificateHold",
		"privilegeWithdrawn", "aACompromise",
	};

	return bit >= 1 && bit <= 8 ? names[bit] : NULL;
}
