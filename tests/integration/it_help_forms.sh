#!/usr/bin/env bash
# it_help_forms.sh - every option `--help` shows works in the form shown, and the defaults it shows are the documented ones
#
# For revcheckd, each option line of `revcheckd --help` is executed as
# shown (OPTION VALUE, a value of its metavar; each alternative of
# a|b; a bracketed optional value both bare and given) with
# --check-config on an origin or, for the "edge mode:" options, an edge;
# it must say "configuration OK". For filterbuild, each option of each
# command's `--help` is given, in its form, before --help: the parser must
# accept it (exit 0, the usage printed). Then the defaults `revcheckd
# --help` prints in parentheses must be those man/revcheckd.8 and
# docs/API.md document, and filterbuild's "(default X)" those
# man/filterbuild.1 documents, so that the documents cannot drift from
# the program.
. "$(dirname "$0")/lib.sh"

"$FILTERBUILD" keygen --out "$T/k.pem" --pub "$T/k.pub" >/dev/null
mkdir -p "$T/f" "$T/s" "$T/d"
printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s"}\n' "$T/f" "$T/k.pub" "$T/s" >"$T/c.json"
"$REVCHECKD" --help >"$T/rh.txt"
for c in keygen build follow inspect verify audit; do
	"$FILTERBUILD" "$c" --help >"$T/fh-$c.txt"
done

rc=0
python3 - "$REVCHECKD" "$FILTERBUILD" "$T" "$RC_SRC" >"$T/forms.out" 2>&1 <<'PY' || rc=$?
import re, subprocess, sys
rcd, fb, T, SRC = sys.argv[1:5]
def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr
origin = ["--filter-dir", f"{T}/f", "--trusted-key", f"{T}/k.pub", "--state-dir", f"{T}/s"]
edge = ["--upstream-filter", "https://127.0.0.1:9/v1/filter", "--upstream-check",
        "https://127.0.0.1:9/v1/check", "--trusted-key",
        f"{T}/k.pub", "--state-dir", f"{T}/s"]
meta = {"FILE": f"{T}/c.json", "HOST:PORT": "127.0.0.1:8080", "DIR": f"{T}/d",
        "USER": "root", "PUB.pem": f"{T}/k.pub", "URL": "https://127.0.0.1:9/x",
        "PEM": f"{SRC}/tests/vectors/ca.pem", "H": "X-Client-Cert", "L": "debug",
        "F": "json", "M": "revocation-only"}
# ---- revcheckd: every option line, run as shown
lines = open(f"{T}/rh.txt").read().split("\n")
opts = []
for i, l in enumerate(lines):
    m = re.match(r"^  (?:-c, )?(--[a-z-]+)(?: (\S+))?(.*)$", l)
    if not m:
        continue
    name, mv, rest = m.group(1), m.group(2), m.group(3)
    more = []
    for x in lines[i + 1:]:
        if not x.startswith("      "):
            break
        more.append(x.strip())
    desc = rest + " " + " ".join(more)
    opts.append((name, mv, desc))
assert len(opts) >= 45, f"only {len(opts)} options parsed from revcheckd --help"
bad = 0
for name, mv, desc in opts:
    if name in ("--check-config", "--version", "--help"):
        rc, out = run([rcd, name] + (origin if name == "--check-config" else []))
        if rc != 0:
            print(f"FAIL revcheckd {name}: rc {rc}: {out[:200]}"); bad += 1
        else:
            print(f"ok revcheckd {name}")
        continue
    forms = []
    if mv is None:
        forms = [[name]]
    elif mv.startswith("[") and mv.endswith("]"):
        forms = [[name]] + [[name, v] for v in mv[1:-1].split("|")]
    elif "|" in mv:
        forms = [[name, v] for v in mv.split("|")]
    elif mv in meta:
        forms = [[name, meta[mv]]]
    else:
        d = re.findall(r"\(([0-9]+[smhd]?)\)", desc)
        forms = [[name, d[-1] if d else "1"]]
    base = edge if "edge mode:" in desc else origin
    if name in ("--config",):
        base = []
    for f in forms:
        rc, out = run([rcd] + base + f + ["--check-config"])
        if rc != 0 or "configuration OK" not in out:
            print(f"FAIL revcheckd {' '.join(f)}: rc {rc}: {out.strip()[:200]}"); bad += 1
        else:
            print(f"ok revcheckd {' '.join(f)}")
# ---- filterbuild: each option of each command accepted as shown
fmeta = {"KEY.pem": f"{T}/k.pem", "PUB.pem": f"{T}/k.pub", "DIR": f"{T}/d", "P": "0.01",
         "DUR": "1h", "N": "5", "NAME": "default", "F": "text", "CA.pem": f"{SRC}/tests/vectors/ca.pem",
         "CA.pem=CRLISSUER.pem": f"{SRC}/tests/vectors/ca.pem={SRC}/tests/vectors/ca.pem",
         "FILE": f"{T}/r.json", "PCT": "50", "L": "fuse", "URL": "postgresql:///x", "SQL": "SELECT 1",
         "TABLE": f"{T}/t.rct", "HOST:PORT": "127.0.0.1:9102", "FMT": "json",
         "TIME": "2026-01-01T00:00:00Z"}
build_mv = {}
n = 0
for cmd in ("keygen", "build", "follow", "inspect", "verify", "audit"):
    for l in open(f"{T}/fh-{cmd}.txt").read().split("\n"):
        m = re.match(r"^  (--[a-z-]+(?:, --[a-z-]+)*)(?:: as for build| ([A-Z][^ ]*|[a-z]+\|\S+))?", l)
        if not m:
            continue
        names = [x.strip() for x in m.group(1).split(",")]
        for name in names:
            mv = m.group(2) if len(names) == 1 else build_mv.get(name)
            if cmd == "build":
                build_mv[name] = mv
            if name == "--help":
                continue
            argv = [fb, cmd, name] + ([fmeta.get(mv, "1")] if mv else []) + ["--help"]
            rc, out = run(argv)
            n += 1
            if rc != 0 or "usage: filterbuild" not in out:
                print(f"FAIL filterbuild {cmd} {name} {mv or ''}: rc {rc}: {out.strip()[:200]}"); bad += 1
            else:
                print(f"ok filterbuild {cmd} {name} {mv or ''}")
assert n >= 60, f"only {n} filterbuild options"
sys.exit(1 if bad else 0)
PY
while read -r l; do
	case $l in ok\ *) rc_ok "${l#ok }" ;; FAIL\ *) rc_fail "${l#FAIL }" ;; *) echo "# $l" ;; esac
done <"$T/forms.out"
[ $rc = 0 ] || rc_fail "some --help forms do not work"

# ---------------------------------------------------------------- documented defaults
# revcheckd --help prints each option's default from the option table
# (svc/config.c) in parentheses; man/revcheckd.8 says "Default: X." in
# that option's entry. filterbuild's "(default X)" and man/filterbuild.1's
# "Default: X." likewise, and verify --fresh's defaults are revcheckd's.
python3 - "$T" "$RC_SRC" >"$T/defaults.out" 2>&1 <<'PY' && rc=0 || rc=$?
import re, sys
T, SRC = sys.argv[1:3]
def man_defaults(path):
    """--option -> the texts of its .TP entries (an option may have several)."""
    out, cur, prev = {}, None, ""
    for l in open(path):
        m = re.match(r'^\.B[IR]? \\-\\-([a-z\\-]+)', l) if prev.startswith(".TP") else None
        prev = l
        if m:
            cur = "--" + m.group(1).replace("\\-", "-")
            out.setdefault(cur, []).append("")
            continue
        if l.startswith(".TP") or l.startswith(".SS") or l.startswith(".SH"):
            cur = None
        elif cur:
            out[cur][-1] += " " + re.sub(r'^\.[A-Z]+ ', '', l.strip())
    return out
def documents(texts, d):
    """Whether one of the entries states default d."""
    d = re.escape(d)
    return any(re.search(rf'Default: {d}\b|\(default {d}\b|\b{d} \(the default\)|'
                         rf'With {d} \(the default\)', t) for t in texts)
def help_defaults(path, pat):
    out, cur = {}, None
    for l in open(path):
        m = re.match(r'^  (?:-c, )?(--[a-z-]+)', l)
        if m:
            cur = m.group(1)
        m = re.search(pat, l)
        if m and cur and cur not in out:
            out[cur] = m.group(1)
    return out
bad, n = [], 0
man = man_defaults(f"{SRC}/man/revcheckd.8")
hlp = help_defaults(f"{T}/rh.txt", r'\(([0-9][0-9a-z.]*|text|info|required|pem|deny|true)\)\s*$')
for opt, d in sorted(hlp.items()):
    if not documents(man.get(opt, []), d):
        bad.append(f"revcheckd {opt}: --help says ({d}), man/revcheckd.8 does not say it")
    else:
        n += 1
fman = man_defaults(f"{SRC}/man/filterbuild.1")
for cmd in ("build", "follow", "verify", "audit"):
    for opt, d in sorted(help_defaults(f"{T}/fh-{cmd}.txt", r'\(default ([0-9][0-9a-z.]*)[;)]').items()):
        if not documents(fman.get(opt, []), d):
            bad.append(f"filterbuild {cmd} {opt}: --help says default {d}, man/filterbuild.1 does not say it")
        else:
            n += 1
# verify --fresh applies revcheckd's max_age and clock_skew defaults.
v = open(f"{T}/fh-verify.txt").read()
if f"default {hlp['--max-age']}" not in v or f"over {hlp['--clock-skew']} s ahead" not in v:
    bad.append("filterbuild verify --help: --fresh's max_age/clock_skew are not revcheckd's defaults")
assert n >= 30, f"only {n} defaults compared"
assert not bad, "\n".join(bad)
print(n)
PY
[ $rc = 0 ] && rc_ok "documented defaults equal the program's ($(cat "$T/defaults.out") options)" ||
    rc_fail "defaults drift: $(cat "$T/defaults.out")"

rc_done
