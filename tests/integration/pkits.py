#!/usr/bin/env python3
"""pkits.py - runs the NIST PKITS revocation paths through filterbuild and a real revcheckd.

Usage: pkits.py DATA FILTERBUILD KEY FILTERDIR URL PID WORK [--print]

For every path of DATA/paths.json (the PKITS test paths of sections 4.3,
4.4, 4.5, 4.7, 4.14 and 4.15, as tests/data/pkits/README.md says), builds
a filter from the path's CRLs and the trust anchor's CRL, with the trust
anchor and the path's intermediate certificates as --issuer, publishes it
as the next version of FILTERDIR, makes the daemon (PID) reload it, and
asks URL's POST /v1/check about the end entity and each intermediate.

The outcome of a path is either "refused: <first line of filterbuild's
error>" (no version is published, so the daemon keeps not covering that
issuer) or "int1=<status> ... ee=<status>" (intermediates numbered from
the trust anchor side, as PKITS numbers them).

Each outcome is compared with DATA/expected.tsv (id, expected outcome,
why), where "refused /REGEX/" matches the error. Independently of that
file, a path that PKITS says is invalid for a revocation reason must never
answer not_revoked for the certificate concerned, and a path PKITS says is
valid must not answer revoked. With --print, prints the outcomes in the
format of expected.tsv instead of checking.
"""
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import time
import urllib.request


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read() or b"{}")


def status_version(url):
    try:
        with urllib.request.urlopen(url + "/v1/status", timeout=5) as r:
            f = json.loads(r.read()).get("filter")
            return f["version"] if f else 0
    except Exception:
        return -1


def pem(data, name):
    with open(os.path.join(data, "certs", name), "rb") as f:
        return ssl.DER_cert_to_PEM_cert(f.read())


def main():
    data, fb, key, fdir, url, pid, work = sys.argv[1:8]
    printing = "--print" in sys.argv[8:]
    pid = int(pid)
    paths = json.load(open(os.path.join(data, "paths.json")))
    expected = {}
    for line in open(os.path.join(data, "expected.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        tid, exp, why = line.rstrip("\n").split("\t")
        expected[tid] = (exp, why)
    os.makedirs(work, exist_ok=True)

    def pem_file(name):
        p = os.path.join(work, name + ".pem")
        if not os.path.exists(p):
            with open(p, "w") as f:
                f.write(pem(data, name))
        return p

    version = status_version(url)
    fails = 0
    passed = 0
    for tid, ee, ints, crls, _mode, _req, exc, msg in paths:
        # paths.json lists a path's intermediates end-entity side first;
        # PKITS numbers them from the trust anchor.
        ints = list(reversed(ints))
        args = [fb, "build", "--key", key, "--out", fdir, "--allow-shrink",
                "--quiet", "--issuer", pem_file("TrustAnchorRootCertificate.crt")]
        for c in ints:
            args += ["--issuer", pem_file(c)]
        args += [os.path.join(data, "crls", "TrustAnchorRootCRL.crl")]
        args += [os.path.join(data, "crls", c) for c in crls]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            err = (r.stderr.strip().splitlines() or ["?"])[0]
            outcome = "refused: " + err
            answers = {}
        else:
            version += 1
            os.kill(pid, signal.SIGHUP)
            deadline = time.time() + 20
            while status_version(url) != version and time.time() < deadline:
                time.sleep(0.05)
            if status_version(url) != version:
                print(f"FAIL - {tid}: version {version} not served")
                fails += 1
                continue
            answers = {}
            for i, c in enumerate(ints, 1):
                answers[f"int{i}"] = post(url + "/v1/check", {"cert": pem(data, c)}).get("status")
            answers["ee"] = post(url + "/v1/check", {"cert": pem(data, ee)}).get("status")
            outcome = " ".join(f"{k}={v}" for k, v in answers.items())
        if printing:
            print(f"{tid}\t{outcome}\t{msg or 'valid'}")
            continue
        # 1. The safety rule, whatever expected.tsv says.
        m = msg or ""
        concerned = "ee"
        mi = re.search(r"intermediate certificate (\d+)", m)
        if exc == "RevokedError" and mi:
            concerned = f"int{mi.group(1)}"
        if exc is not None and ("revo" in m or "CRL" in m):
            if answers.get(concerned) == "not_revoked":
                print(f"FAIL - {tid}: PKITS: {m[:90]}; revcheck answered "
                      f"not_revoked for {concerned}")
                fails += 1
                continue
        if exc is None and "revoked" in answers.values():
            print(f"FAIL - {tid}: PKITS says valid; revcheck answered revoked: {outcome}")
            fails += 1
            continue
        # 2. The exact outcome, and why, from expected.tsv.
        if tid not in expected:
            print(f"FAIL - {tid}: not in expected.tsv (outcome: {outcome})")
            fails += 1
            continue
        exp, why = expected[tid]
        if exp.startswith("refused /"):
            ok = outcome.startswith("refused: ") and re.search(exp[9:-1], outcome)
        else:
            ok = outcome == exp
        if ok:
            passed += 1
            if os.environ.get("RC_VERBOSE") == "1":
                print(f"ok - {tid}: {outcome} ({why})")
        else:
            print(f"FAIL - {tid}: got '{outcome}', want '{exp}' ({why})")
            fails += 1
    if not printing:
        print(f"pkits: {passed} passed, {fails} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
