#!/usr/bin/env bash
# it_deb.sh - `make deb`'s package: lintian-clean, its contents, conffiles kept on upgrade, maintainer scripts
#
# Builds the package with packaging/deb/mkdeb.sh from the binaries under
# test (no rebuild), then without touching this machine's packages:
# - lintian reports no error and no warning;
# - the contents: both binaries (runnable), man pages, units naming
#   /usr/sbin and /etc, example configs, alert rules, dashboard,
#   copyright and changelog; nothing names /usr/local; md5sums verify;
# - every file under /etc is a conffile;
# - real dpkg installs it into a private root (--root, chrootless
#   scripts with adduser/getent/systemctl replaced by recorders on PATH):
#   postinst creates the system user "revcheck" once, and an upgrade
#   keeps a config the operator edited (the new one lands beside it as
#   .dpkg-dist) while an unedited one is updated.
# it-serial: runs make deb in the source tree
. "$(dirname "$0")/lib.sh"

for t in dpkg-deb dpkg-shlibdeps lintian; do
	command -v "$t" >/dev/null || { rc_fail "$t is missing (make deps)"; rc_done; exit 1; }
done

# The build directory of the binaries under test, relative to the tree.
build=$(dirname "$(readlink -f "$REVCHECKD")")
build=${build#"$(readlink -f "$RC_SRC")/"}
out=$(TMPDIR=$T bash "$RC_SRC/packaging/deb/mkdeb.sh" 0.1.0 "$build" "$T/out" 2>"$T/mkdeb.err") ||
	{ rc_fail "mkdeb.sh failed: $(cat "$T/mkdeb.err")"; rc_done; exit 1; }
DEB=$T/out/revcheck_0.1.0_$(dpkg --print-architecture).deb
rc_expect_eq "$out" "$DEB" "mkdeb.sh names the package it wrote"

# ---------------------------------------------------------------- lintian
lint=$(lintian --fail-on error,warning "$DEB" 2>&1) && lrc=0 || lrc=$?
rc_expect_eq "$lrc" 0 "lintian: no error or warning"
rc_expect_eq "$(grep -E '^(E|W): ' <<<"$lint" || true)" "" "lintian prints no E: or W: tag"

# ---------------------------------------------------------------- contents
dpkg-deb -R "$DEB" "$T/x"
X=$T/x
for f in usr/sbin/revcheckd usr/bin/filterbuild usr/share/man/man8/revcheckd.8.gz \
    usr/share/man/man1/filterbuild.1.gz lib/systemd/system/revcheckd.service \
    lib/systemd/system/revcheckd-edge.service lib/systemd/system/filterbuild.service \
    lib/systemd/system/filterbuild.timer etc/revcheck/revcheckd.json \
    etc/revcheck/revcheckd-edge.json usr/share/doc/revcheck/copyright \
    usr/share/doc/revcheck/changelog.gz usr/share/doc/revcheck/OPERATIONS.md \
    usr/share/doc/revcheck/examples/revcheckd-alerts.yml \
    usr/share/doc/revcheck/examples/grafana/revcheckd-dashboard.json; do
	[ -f "$X/$f" ] && rc_ok "package has /$f" || rc_fail "package lacks /$f"
done
rc_expect_match "$("$X/usr/sbin/revcheckd" --version)" "^revcheckd 0\.1\.0$" "the packaged revcheckd runs"
rc_expect_match "$("$X/usr/bin/filterbuild" --version)" "^filterbuild 0\.1\.0$" "the packaged filterbuild runs"
rc_expect_match "$(grep '^ExecStart=' "$X/lib/systemd/system/revcheckd.service")" \
    '^ExecStart=/usr/sbin/revcheckd -c /etc/revcheck/revcheckd.json$' "the unit names the packaged paths"
# Comments may mention the default PREFIX; no setting may use it.
left=$(grep -rn '/usr/local' "$X/etc" "$X/lib" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(#|//|\*)' || true)
rc_expect_eq "$left" "" "no packaged config or unit uses /usr/local"
ctl=$(cat "$X/DEBIAN/control")
rc_expect_match "$ctl" '^Depends: .*libmicrohttpd12.*adduser' "Depends from dpkg-shlibdeps, plus adduser"
rc_expect_match "$ctl" '^Package: revcheck$' "control: Package"
(cd "$X" && md5sum --quiet -c DEBIAN/md5sums) >/dev/null 2>&1 && rc_ok "md5sums verify" ||
	rc_fail "md5sums do not verify"
rc_expect_eq "$(cat "$X/DEBIAN/conffiles")" "$(cd "$X" && find etc -type f | sort | sed 's|^|/|')" \
    "every file under /etc is a conffile"
for s in postinst prerm postrm; do
	sh -n "$X/DEBIAN/$s" && rc_ok "$s parses" || rc_fail "$s has a syntax error"
done

# ---------------------------------------------------------------- dpkg into a private root
R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$T/fake"
: >"$R/var/lib/dpkg/status"
: >"$R/var/lib/dpkg/available"
for t in adduser getent systemctl deb-systemd-invoke; do
	cat >"$T/fake/$t" <<EOF
#!/bin/sh
echo "$t \$*" >>"$T/fake.log"
[ "$t" != getent ] || [ -e "$T/user-exists" ]
EOF
	chmod +x "$T/fake/$t"
done
DPKG=(dpkg --root="$R" --force-script-chrootless --force-not-root --force-depends
    --log="$T/dpkg.log")
: >"$T/fake.log"
PATH="$T/fake:$PATH" "${DPKG[@]}" -i "$DEB" </dev/null >"$T/dpkg1.out" 2>&1 &&
    rc_ok "dpkg installs the package into a private root" ||
    rc_fail "dpkg -i: $(tail -n 5 "$T/dpkg1.out")"
rc_expect_match "$(cat "$T/fake.log")" '^adduser --quiet --system --group --no-create-home --home /var/lib/revcheck .*revcheck$' \
    "postinst creates the system user revcheck"
[ -x "$R/usr/sbin/revcheckd" ] && rc_ok "installed: /usr/sbin/revcheckd" || rc_fail "nothing installed"

# The operator edits one config; version 0.1.2 ships new text for two.
printf '// edited by the operator\n' >>"$R/etc/revcheck/revcheckd.json"
edited=$(cat "$R/etc/revcheck/revcheckd.json")
dpkg-deb -R "$DEB" "$T/v2"
sed -i 's/^Version: 0\.1\.0$/Version: 0.1.2/' "$T/v2/DEBIAN/control"
printf '// shipped in 0.1.2\n' >>"$T/v2/etc/revcheck/revcheckd.json"
printf '# shipped in 0.1.2\n' >>"$T/v2/etc/revcheck/filterbuild.conf"
dpkg-deb --root-owner-group -b "$T/v2" "$T/v2.deb" >/dev/null
touch "$T/user-exists"
: >"$T/fake.log"
PATH="$T/fake:$PATH" "${DPKG[@]}" --force-confdef --force-confold -i "$T/v2.deb" </dev/null \
    >"$T/dpkg2.out" 2>&1 && rc_ok "dpkg upgrades to 0.1.2" || rc_fail "dpkg upgrade: $(tail -n 5 "$T/dpkg2.out")"
rc_expect_eq "$(cat "$R/etc/revcheck/revcheckd.json")" "$edited" "the upgrade keeps the edited revcheckd.json"
[ -f "$R/etc/revcheck/revcheckd.json.dpkg-dist" ] && rc_ok "the new one lands beside it (.dpkg-dist)" ||
	rc_fail "no revcheckd.json.dpkg-dist"
rc_expect_match "$(tail -n 1 "$R/etc/revcheck/filterbuild.conf")" '^# shipped in 0\.1\.2$' \
    "an unedited conffile is updated"
rc_expect_eq "$(grep -c '^adduser' "$T/fake.log" || true)" 0 "postinst does not add an existing user again"
rc_expect_match "$(sed -n 's/^Version: //p' "$R/var/lib/dpkg/status")" '^0\.1\.2$' "dpkg records 0.1.2"

# Removal keeps the configuration (conffiles stay until purge).
: >"$T/fake.log"
PATH="$T/fake:$PATH" "${DPKG[@]}" -r revcheck </dev/null >"$T/dpkg3.out" 2>&1 &&
    rc_ok "dpkg removes the package" || rc_fail "dpkg -r: $(tail -n 5 "$T/dpkg3.out")"
[ ! -e "$R/usr/sbin/revcheckd" ] && rc_ok "the binary is gone" || rc_fail "the binary stayed"
rc_expect_eq "$(cat "$R/etc/revcheck/revcheckd.json")" "$edited" "remove (not purge) keeps the edited config"

rc_done
