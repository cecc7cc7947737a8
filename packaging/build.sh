#!/bin/bash
# Builds the six ivcuda packages from the Maven build's outputs (no network inside the package build):
#   packaging/out/ivcuda-host_<v>_<arch>.deb, ivcuda-guest_<v>_<arch>.deb, ivcuda-backend_<v>_<arch>.deb,
#   ivcuda-host-<v>.<arch>.rpm, ivcuda-guest-<v>.<arch>.rpm, ivcuda-backend-<v>.<arch>.rpm (the host and
#   back-end packages hold a program too: ivcuda-integrity-oracle)
# Usage: packaging/build.sh [--deb-only|--rpm-only]. Runs `mvn -B -q package -DskipTests` first unless the
# jars and the guest library are already built (IVCUDA_SKIP_MAVEN=1 never builds).
# Needs: debhelper, dpkg-dev, fakeroot (debs); rpm (rpmbuild; Debian's rpm package is enough); asciidoctor
# (man pages from the AsciiDoc that picocli's ManPageGenerator wrote at mvn package), help2man (the guest
# tools' man pages from their --help); java and libvirt0 (the class lists of class-data sharing are
# recorded from runs of the built commands, the provisioner's against libvirt's test driver).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/packaging/out"
want_deb=1 want_rpm=1
case "${1:-}" in
    --deb-only) want_rpm=0 ;;
    --rpm-only) want_deb=0 ;;
    "") ;;
    *) echo "usage: $0 [--deb-only|--rpm-only]" >&2; exit 64 ;;
esac

built_outputs=(
    cuda-server/target/cuda-server.jar libvirt-hook/target/libvirt-hook.jar
    ivshmem-provisioner/target/ivshmem-provisioner.jar guest/target/libcuda.so.1 guest/target/ivcuda-guest-check
    guest/target/ivcuda-guest-irqd guest/target/libnvidia-ml.so.1 guest/target/ivcuda-smi host-tools/target/ivcuda-integrity-oracle host-tools/target/ivcuda-syscall-filter cuda-server/target/man libvirt-hook/target/man ivshmem-provisioner/target/man
    cuda-server/target/ivcuda-server.bash-completion libvirt-hook/target/50-ivcuda.bash-completion
    ivshmem-provisioner/target/ivshmem-provisioner.bash-completion
    backend-agent/target/backend-agent.jar backend-agent/target/man backend-agent/target/ivcuda-backend-agent.bash-completion
)
need_build=0
for f in "${built_outputs[@]}"; do [ -e "$repo/$f" ] || need_build=1; done
if [ "$need_build" = 1 ] && [ "${IVCUDA_SKIP_MAVEN:-0}" != 1 ]; then
    echo "== mvn package (jars, guest library)"
    (cd "$repo" && mvn -B -q package -DskipTests)
fi
for f in "${built_outputs[@]}"; do
    [ -e "$repo/$f" ] || { echo "missing build output $f (run mvn -B package -DskipTests)" >&2; exit 1; }
done

# 0.1.0-SNAPSHOT -> 0.1.0~SNAPSHOT: sorts before the release 0.1.0 in dpkg and rpm alike.
pom_version=$(sed -n '0,/<version>/s:.*<version>\(.*\)</version>.*:\1:p' "$repo/pom.xml")
version="${pom_version//-/\~}"
echo "== version $version (pom $pom_version)"

rm -rf "$out"
mkdir -p "$out"

# Man pages: section 8 for the host's commands (they are the admin's), the package version in the footer.
docs="$out/docs"
mkdir -p "$docs/man" "$docs/cds"
for adoc in "$repo"/cuda-server/target/man/*.adoc "$repo"/libvirt-hook/target/man/*.adoc "$repo"/ivshmem-provisioner/target/man/*.adoc \
    "$repo"/backend-agent/target/man/*.adoc; do
    sed -e "s/(not built as a package)/$version/g" -e 's/^:manmanual: .*/:manmanual: ivcuda Manual/' \
        -e 's/\(ivshmem-provisioner[a-z-]*\|ivcuda-server\|ivcuda-backend-agent\|50-ivcuda\)(1)/\1(8)/g' "$adoc" > "$docs/$(basename "$adoc")"
    asciidoctor -b manpage -D "$docs/man" "$docs/$(basename "$adoc")"
done
help2man --no-info --no-discard-stderr --section=1 --version-string="$version" \
    --name="tell whether this VM has an ivcuda device and the host's cuda-server answers" \
    -o "$docs/man/ivcuda-guest-check.1" "$repo/guest/target/ivcuda-guest-check"
help2man --no-info --no-discard-stderr --section=8 --version-string="$version" \
    --name="hand the ivshmem device's MSI-X interrupts to CUDA processes" \
    -o "$docs/man/ivcuda-guest-irqd.8" "$repo/guest/target/ivcuda-guest-irqd"
# ivcuda-smi links libnvidia-ml.so.1, which the guest's loader finds in /usr/lib/ivcuda: here, the build's
# (without it help2man's page would be the loader's error)
LD_LIBRARY_PATH="$repo/guest/target" help2man --no-info --no-discard-stderr --section=1 --version-string="$version" \
    --name="show this VM's view of its GPU (memory quota, utilisation, processes) like nvidia-smi" \
    -o "$docs/man/ivcuda-smi.1" "$repo/guest/target/ivcuda-smi"

# Class-data sharing: the classes each command loads, recorded from one representative run of each
# (make-cds-archives dumps the archives from these lists on the target host, for its java).
train=$(mktemp -d)
printf 'runtime.dir=%s/run\nshm.dir=%s/shm\nlog.dir=%s/log\nserver.user=%s\n' "$train" "$train" "$train" "$(id -un)" > "$train/host.properties"
java -Xshare:off -XX:DumpLoadedClassList="$docs/cds/ivshmem-provisioner.classlist" -XX:TieredStopAtLevel=1 \
    -XX:+UseSerialGC -Divcuda.log.target=none -jar "$repo/ivshmem-provisioner/target/ivshmem-provisioner.jar" \
    --config "$train/host.properties" --connect test:///default status > /dev/null || true
IVCUDA_CONFIG="$train/host.properties" java -Xshare:off -XX:DumpLoadedClassList="$docs/cds/libvirt-hook.classlist" \
    -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar "$repo/libvirt-hook/target/libvirt-hook.jar" ivcuda-train release end - \
    < "$repo/libvirt-hook/src/test/resources/domains/tagged-release-end.xml" 2> /dev/null || true
java -Xshare:off -XX:DumpLoadedClassList="$docs/cds/cuda-server.classlist" -XX:+UseSerialGC \
    -jar "$repo/cuda-server/target/cuda-server.jar" --set region.path="$train/region" --set region.size=16777216 \
    --set backend=host-memory --set pidfile="$train/server.pid" > "$train/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do [ -s "$train/server.pid" ] && break; sleep 0.1; done
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true
rm -rf "$train"
for list in ivshmem-provisioner libvirt-hook cuda-server; do
    [ -s "$docs/cds/$list.classlist" ] || { echo "no class list recorded for $list" >&2; exit 1; }
done

# stage_host DEST UNIT_DIR QEMU_GROUP: the host package's files as installed.
stage_host() {
    local dest="$1" unit_dir="$2" qemu_group="$3"
    install -d "$dest/usr/share/ivcuda/lib" "$dest/usr/bin" "$dest/usr/libexec/ivcuda" \
        "$dest/etc/libvirt/hooks/qemu.d" "$dest/etc/ivcuda" "$dest/$unit_dir" "$dest/usr/lib/tmpfiles.d" \
        "$dest/usr/lib/sysusers.d" "$dest/etc/apparmor.d/abstractions/libvirt-qemu.d" "$dest/usr/share/doc/ivcuda" \
        "$dest/usr/share/man/man8" "$dest/usr/share/bash-completion/completions" "$dest/usr/share/ivcuda/cds" \
        "$dest/etc/logrotate.d"
    local module
    for module in cuda-server libvirt-hook ivshmem-provisioner; do
        install -m 0644 "$repo/$module/target/$module.jar" "$dest/usr/share/ivcuda/"
        # one lib/ for all three (same versions: the root pom's dependencyManagement)
        install -m 0644 "$repo/$module/target/lib/"*.jar "$dest/usr/share/ivcuda/lib/"
    done
    install -m 0755 "$repo/packaging/files/ivcuda-server" "$repo/packaging/files/ivshmem-provisioner" "$dest/usr/bin/"
    install -m 0755 "$repo/libvirt-hook/src/main/sh/50-ivcuda" "$dest/usr/libexec/ivcuda/50-ivcuda"
    ln -s /usr/libexec/ivcuda/50-ivcuda "$dest/etc/libvirt/hooks/qemu.d/50-ivcuda"
    install -m 0644 "$repo/templates/ivcuda.properties" "$dest/etc/ivcuda/ivcuda.properties"
    # the built-in default is libvirt-qemu (Debian/Ubuntu); Fedora/RHEL's QEMU runs as group qemu
    if [ "$qemu_group" != libvirt-qemu ]; then
        sed -i "s/^#qemu.group=.*/qemu.group=$qemu_group/" "$dest/etc/ivcuda/ivcuda.properties"
    fi
    install -m 0644 "$repo/templates/log4j2-hook.xml" "$repo/templates/log4j2-provisioner.xml" "$dest/etc/ivcuda/"
    install -m 0644 "$repo/templates/ivcuda-provisioner.service" "$repo/templates/ivcuda-server@.service" \
        "$repo/templates/ivcuda-relay@.service" "$repo/templates/ivcuda-mps.service" "$dest/$unit_dir/"
    sed -i "s/^SupplementaryGroups=.*/SupplementaryGroups=$qemu_group/" "$dest/$unit_dir/ivcuda-server@.service" \
        "$dest/$unit_dir/ivcuda-relay@.service"
    sed "s/@QEMU_GROUP@/$qemu_group/" "$repo/packaging/files/ivcuda.tmpfiles.in" > "$dest/usr/lib/tmpfiles.d/ivcuda.conf"
    install -m 0644 "$repo/packaging/files/ivcuda.sysusers" "$dest/usr/lib/sysusers.d/ivcuda.conf"
    install -m 0644 "$repo/packaging/files/apparmor-libvirt-qemu" "$dest/etc/apparmor.d/abstractions/libvirt-qemu.d/ivcuda"
    install -m 0644 "$repo/docs/operations.md" "$repo/templates/grafana-ivcuda.json" "$dest/usr/share/doc/ivcuda/"
    install -m 0644 "$docs"/man/*.8 "$dest/usr/share/man/man8/"
    rm -f "$dest/usr/share/man/man8/ivcuda-guest-irqd.8" "$dest/usr/share/man/man8/ivcuda-backend-agent.8"
    for command in ivcuda-server 50-ivcuda ivshmem-provisioner; do
        # sourced, not run: without picocli's "#!/usr/bin/env bash" line
        sed '1{/^#!/d}' "$repo"/*/target/"$command.bash-completion" > "$dest/usr/share/bash-completion/completions/$command"
        chmod 0644 "$dest/usr/share/bash-completion/completions/$command"
    done
    install -m 0644 "$docs"/cds/*.classlist "$dest/usr/share/ivcuda/cds/"
    install -m 0755 "$repo/packaging/files/make-cds-archives" "$dest/usr/libexec/ivcuda/make-cds-archives"
    # started by the server, one per guest process that runs cudart (integrity.oracle)
    install -m 0755 "$repo/host-tools/target/ivcuda-integrity-oracle" "$dest/usr/libexec/ivcuda/ivcuda-integrity-oracle"
    # the direct launcher's system-call filter (server.syscall.filter; libseccomp opened at run time)
    install -m 0755 "$repo/host-tools/target/ivcuda-syscall-filter" "$dest/usr/libexec/ivcuda/ivcuda-syscall-filter"
    install -m 0644 "$repo/packaging/files/ivcuda.logrotate" "$dest/etc/logrotate.d/ivcuda-host"
}

# stage_backend DEST UNIT_DIR: inside a back-end GPU domain, the agent and the servers it starts. Its own
# directories (/usr/share/ivcuda-backend, /usr/libexec/ivcuda-backend): a host may hold ivcuda-host too
# (a stand-in back-end on the host), and the two must not own the same files.
stage_backend() {
    local dest="$1" unit_dir="$2"
    install -d "$dest/usr/share/ivcuda-backend/lib" "$dest/usr/bin" "$dest/usr/libexec/ivcuda-backend" "$dest/etc/ivcuda" \
        "$dest/$unit_dir" "$dest/etc/init.d" "$dest/usr/share/man/man8" "$dest/usr/share/bash-completion/completions" \
        "$dest/usr/share/doc/ivcuda-backend" "$dest/etc/logrotate.d"
    local module
    for module in backend-agent cuda-server; do
        install -m 0644 "$repo/$module/target/$module.jar" "$dest/usr/share/ivcuda-backend/"
        install -m 0644 "$repo/$module/target/lib/"*.jar "$dest/usr/share/ivcuda-backend/lib/"
    done
    install -m 0755 "$repo/packaging/files/ivcuda-backend-agent" "$dest/usr/bin/"
    # the host's server launcher, with this package's jars
    sed 's|IVCUDA_HOME="${IVCUDA_HOME:-/usr/share/ivcuda}"|IVCUDA_HOME="${IVCUDA_HOME:-/usr/share/ivcuda-backend}"|' \
        "$repo/packaging/files/ivcuda-server" > "$dest/usr/libexec/ivcuda-backend/ivcuda-server"
    grep -q 'share/ivcuda-backend' "$dest/usr/libexec/ivcuda-backend/ivcuda-server" || { echo "server launcher not adapted" >&2; exit 1; }
    chmod 0755 "$dest/usr/libexec/ivcuda-backend/ivcuda-server"
    install -m 0755 "$repo/host-tools/target/ivcuda-integrity-oracle" "$dest/usr/libexec/ivcuda-backend/ivcuda-integrity-oracle"
    # a doorbell front-end's slot: the agent starts it per slot device (irqd.command) for the server's interrupts
    install -m 0755 "$repo/guest/target/ivcuda-guest-irqd" "$dest/usr/libexec/ivcuda-backend/ivcuda-guest-irqd"
    install -m 0644 "$repo/templates/backend.properties" "$repo/templates/backend-server.properties" "$dest/etc/ivcuda/"
    install -m 0644 "$repo/templates/ivcuda-backend-agent.service" "$dest/$unit_dir/"
    install -m 0755 "$repo/packaging/files/ivcuda-backend-agent.init" "$dest/etc/init.d/ivcuda-backend-agent"
    install -m 0644 "$docs/man/ivcuda-backend-agent.8" "$dest/usr/share/man/man8/"
    sed '1{/^#!/d}' "$repo/backend-agent/target/ivcuda-backend-agent.bash-completion" \
        > "$dest/usr/share/bash-completion/completions/ivcuda-backend-agent"
    chmod 0644 "$dest/usr/share/bash-completion/completions/ivcuda-backend-agent"
    install -m 0644 "$repo/docs/operations.md" "$dest/usr/share/doc/ivcuda-backend/"
    install -m 0644 "$repo/packaging/files/ivcuda-backend.logrotate" "$dest/etc/logrotate.d/ivcuda-backend"
}

# stage_guest DEST UDEV_DIR UNIT_DIR
stage_guest() {
    local dest="$1" udev_dir="$2" unit_dir="$3"
    install -d "$dest/usr/lib/ivcuda" "$dest/etc/ld.so.conf.d" "$dest/$udev_dir" "$dest/usr/bin" "$dest/usr/sbin" \
        "$dest/$unit_dir" "$dest/usr/share/man/man1" "$dest/usr/share/man/man8" "$dest/usr/share/bash-completion/completions"
    install -m 0644 "$repo/guest/target/libcuda.so.1" "$dest/usr/lib/ivcuda/libcuda.so.1"
    install -m 0644 "$repo/guest/target/libnvidia-ml.so.1" "$dest/usr/lib/ivcuda/libnvidia-ml.so.1"
    install -m 0755 "$repo/guest/target/ivcuda-smi" "$dest/usr/bin/ivcuda-smi"
    install -m 0644 "$docs/man/ivcuda-smi.1" "$dest/usr/share/man/man1/"
    install -m 0644 "$repo/packaging/files/ld.so.conf" "$dest/etc/ld.so.conf.d/ivcuda.conf"
    install -m 0644 "$repo/packaging/files/60-ivcuda.rules" "$dest/$udev_dir/60-ivcuda.rules"
    install -m 0755 "$repo/guest/target/ivcuda-guest-check" "$dest/usr/bin/ivcuda-guest-check"
    install -m 0755 "$repo/guest/target/ivcuda-guest-irqd" "$dest/usr/sbin/ivcuda-guest-irqd"
    install -m 0644 "$repo/templates/ivcuda-guest-irqd.service" "$dest/$unit_dir/"
    install -m 0644 "$docs/man/ivcuda-guest-check.1" "$dest/usr/share/man/man1/"
    install -m 0644 "$docs/man/ivcuda-guest-irqd.8" "$dest/usr/share/man/man8/"
    # C programs without a picocli model: bash-completion's completer of --long options reads their --help
    local command
    for command in ivcuda-guest-check ivcuda-guest-irqd ivcuda-smi; do
        echo "complete -F _longopt $command" > "$dest/usr/share/bash-completion/completions/$command"
    done
}

if [ "$want_deb" = 1 ]; then
    echo "== deb"
    src="$out/deb/ivcuda-$version"
    mkdir -p "$src"
    cp -a "$repo/packaging/deb/debian" "$src/"
    # dh_installinit installs it as /etc/init.d/ivcuda-provisioner and registers it (update-rc.d, invoke-rc.d)
    cp "$repo/packaging/files/ivcuda-provisioner.init" "$src/debian/ivcuda-host.ivcuda-provisioner.init"
    # Debian 12's debhelper looks for units and udev rules under /lib.
    stage_host "$src/staged/host" lib/systemd/system libvirt-qemu
    stage_guest "$src/staged/guest" lib/udev/rules.d lib/systemd/system
    stage_backend "$src/staged/backend" lib/systemd/system
    # dh_installinit installs and registers it (the staged copy is left out of the package's tree)
    mv "$src/staged/backend/etc/init.d/ivcuda-backend-agent" "$src/debian/ivcuda-backend.ivcuda-backend-agent.init"
    rmdir "$src/staged/backend/etc/init.d"
    cat > "$src/debian/changelog" <<CHANGELOG
ivcuda ($version-1) unstable; urgency=medium

  * Build of ivcuda $pom_version from the source tree.

 -- ivcuda maintainers <maintainers@ivcuda.dev>  $(date -R -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}")
CHANGELOG
    (cd "$src" && dpkg-buildpackage -b -us -uc)
    mv "$out/deb/"*.deb "$out/"
    mv "$out/deb/"*.changes "$out/" 2>/dev/null || true
fi

if [ "$want_rpm" = 1 ]; then
    echo "== rpm"
    top="$out/rpm"
    mkdir -p "$top"/{BUILD,RPMS,SOURCES,SPECS,SRPMS}
    stage_host "$top/SOURCES/host" usr/lib/systemd/system qemu
    stage_guest "$top/SOURCES/guest" usr/lib/udev/rules.d usr/lib/systemd/system
    stage_backend "$top/SOURCES/backend" usr/lib/systemd/system
    cp "$repo/packaging/rpm/ivcuda.spec" "$top/SPECS/"
    # --nodeps: BuildRequires are checked against the rpm database, which a Debian builder does not have.
    rpmbuild -bb --nodeps --define "_topdir $top" --define "ivcuda_version $version" \
        --define "_build_id_links none" "$top/SPECS/ivcuda.spec"
    find "$top/RPMS" -name '*.rpm' -exec mv {} "$out/" \;
fi

echo "== packages in $out"
ls -1 "$out"/*.deb "$out"/*.rpm 2>/dev/null || true
