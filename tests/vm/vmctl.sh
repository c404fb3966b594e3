#!/usr/bin/env bash
# Two Debian 12 VMs under qemu (TCG: software emulation; KVM here cannot run a stock kernel), joined back
# to back by two virtio "cables" (qemu socket netdevs, 100G full duplex so 802.3ad can aggregate), each
# with a management NIC on qemu's user network and SSH forwarded to 127.0.0.1:(2220 + 10 x slot + N).
# The slot is the run's test bed (GPUOPS_TESTBED_SLOT, tests/utils/testbed.py; 0 when unset): two runs on one
# machine use their own ports for SSH and for the cables.
#   vmctl.sh build   rootfs with mmdebstrap, base image with mkfs.ext4 -d (cached in .cache/vm)
#   vmctl.sh start [netplan|networkmanager]
#                    boot both VMs from fresh overlays and wait for SSH; the argument says what manages the
#                    management NIC (default netplan with systemd-networkd; networkmanager: NetworkManager
#                    runs and networkd does not, as on a NetworkManager node)
#   vmctl.sh stop    power them off
set -euo pipefail
cd "$(dirname "$0")/../.."
VM=${GPUOPS_VM_DIR:-$PWD/.cache/vm}
mkdir -p "$VM"
SLOT=${GPUOPS_TESTBED_SLOT:-0}
case "$SLOT" in [0-7]) ;; *) echo "vmctl.sh: GPUOPS_TESTBED_SLOT=$SLOT: a slot 0-7" >&2; exit 2 ;; esac
ssh_port() { echo $((2220 + 10 * SLOT + $1)); }
cable_port() { echo $((40400 + 10 * SLOT + $1)); }

IMAGE_VERSION=11  # bump when the image recipe changes

build() {
  if [ -f "$VM/base.img" ] && [ -f "$VM/id_ed25519" ] && [ "$(cat "$VM/image-version" 2>/dev/null)" = "$IMAGE_VERSION" ]; then
    return
  fi
  rm -rf "$VM/rootfs"
  # The generic kernel, not the cloud one: only it has Soft-RoCE (rdma_rxe), with rdma-core, the verbs tools and
  # perftest from Debian (issue 35)
  # Its initrd holds only what finds the root disk (MODULES=list): under TCG a generic initrd of every storage driver
  # takes seconds to unpack and probe. The hooks' $1 is mmdebstrap's (the root it builds), not this script's.
  # shellcheck disable=SC2016
  mmdebstrap --variant=minbase \
    --setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"' \
    --setup-hook='echo MODULES=list >"$1/etc/initramfs-tools/conf.d/gpuops-test.conf"' \
    --setup-hook='printf "virtio_pci\nvirtio_blk\next4\n" >"$1/usr/share/initramfs-tools/modules.d/gpuops-test.conf"' \
    --include=systemd-sysv,udev,dbus,openssh-server,python3,iproute2,netplan.io,\
linux-image-amd64,iputils-ping,ethtool,kmod,procps,network-manager,iperf3,lldpd,pciutils,\
rdma-core,ibverbs-providers,ibverbs-utils,perftest bookworm "$VM/rootfs" >"$VM/mmdebstrap.log" 2>&1
  [ -f "$VM/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -f "$VM/id_ed25519"
  local r="$VM/rootfs"
  install -d -m 700 "$r/root/.ssh"
  install -m 600 "$VM/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
  echo "/dev/vda / ext4 defaults 0 1" >"$r/etc/fstab"
  echo "options bonding max_bonds=0" >"$r/etc/modprobe.d/bonding.conf"
  # Under TCG every driver udev loads and every boot job costs seconds of emulated CPU. The generic kernel loads
  # drivers for q35's SATA, CD, watchdog, SMBus, PC speaker, parallel port and mouse, and KVM for the emulated
  # CPU; none is used here (the VMs also have no VGA: -vga none). e2scrub_reap took 23 s of a 50 s boot.
  printf 'blacklist %s\n' ahci sr_mod iTCO_wdt lpc_ich i2c_i801 pcspkr parport_pc ppdev psmouse serio_raw \
    kvm kvm_amd kvm_intel cfg80211 efi_pstore floppy >"$r/etc/modprobe.d/gpuops-test-blacklist.conf"
  for unit in e2scrub_reap.service e2scrub_all.timer getty@tty1.service; do
    ln -sf /dev/null "$r/etc/systemd/system/$unit"
  done
  printf 'bonding\n8021q\n' >"$r/etc/modules-load.d/gpuops-test.conf"
  # Management through netplan, as on Ubuntu GPU nodes: a change to enp0s3 in a later netplan file can cut it.
  install -d "$r/etc/netplan"
  printf 'network:\n  version: 2\n  ethernets:\n    enp0s3:\n      dhcp4: true\n' >"$r/etc/netplan/01-mgmt.yaml"
  chmod 600 "$r/etc/netplan/01-mgmt.yaml"
  ln -sf /lib/systemd/system/systemd-networkd.service "$r/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
  # One image, two kinds of node, chosen on the kernel command line (gpuops.backend=networkmanager).
  local nm=gpuops.backend=networkmanager
  for unit in systemd-networkd.service systemd-networkd.socket systemd-networkd-wait-online.service; do
    install -d "$r/etc/systemd/system/$unit.d"
    printf '[Unit]\nConditionKernelCommandLine=!%s\n' "$nm" >"$r/etc/systemd/system/$unit.d/gpuops-test.conf"
  done
  for unit in NetworkManager.service NetworkManager-wait-online.service; do
    install -d "$r/etc/systemd/system/$unit.d"
    printf '[Unit]\nConditionKernelCommandLine=%s\n' "$nm" >"$r/etc/systemd/system/$unit.d/gpuops-test.conf"
  done
  # As NetworkManager: management by DHCP on enp0s3, no automatic profiles on the data links. netplan's
  # generator marks the devices it gives networkd as unmanaged in /run/NetworkManager/conf.d/netplan.conf;
  # this file sorts after it and empties that list.
  printf '[main]\nplugins=keyfile\nno-auto-default=*\n[keyfile]\nunmanaged-devices=\n' \
    >"$r/etc/NetworkManager/conf.d/zz-gpuops-test.conf"
  # netplan's generator also marks its networkd devices NM_UNMANAGED in /run/udev/rules.d/90-netplan.rules.
  install -d "$r/etc/udev/rules.d"
  printf 'SUBSYSTEM=="net", IMPORT{cmdline}="%s"\nSUBSYSTEM=="net", ENV{%s}=="networkmanager", ENV{NM_UNMANAGED}="0"\n' \
    gpuops.backend gpuops.backend >"$r/etc/udev/rules.d/99-gpuops-test.rules"
  cat >"$r/etc/systemd/system/gpuops-debug.service" <<'UNIT'
[Unit]
Description=gpuops test: network state on the console
After=network-online.target NetworkManager.service
[Service]
Type=oneshot
StandardOutput=journal+console
ExecStart=/bin/sh -c 'sleep 5; ls /run/NetworkManager/conf.d; cat /run/NetworkManager/conf.d/*; nmcli -t device || true; ip -br addr'
[Install]
WantedBy=multi-user.target
UNIT
  ln -sf /etc/systemd/system/gpuops-debug.service "$r/etc/systemd/system/multi-user.target.wants/gpuops-debug.service"
  printf '[connection]\nid=mgmt\ntype=ethernet\ninterface-name=enp0s3\n\n[ipv4]\nmethod=auto\n\n[ipv6]\nmethod=ignore\n' \
    >"$r/etc/NetworkManager/system-connections/mgmt.nmconnection"
  chmod 600 "$r/etc/NetworkManager/system-connections/mgmt.nmconnection"
  # lldpd on the data links only (never the management NIC), every second, so the VMs see each other quickly
  install -d "$r/etc/lldpd.d"
  printf 'configure system interface pattern enp0s4,enp0s5\nconfigure lldp tx-interval 1\n' \
    >"$r/etc/lldpd.d/gpuops-test.conf"
  cp "$r"/boot/vmlinuz-* "$VM/vmlinuz"
  cp "$r"/boot/initrd.img-* "$VM/initrd.img"
  rm -f "$VM/base.img"
  mkfs.ext4 -q -F -d "$r" "$VM/base.img" 1500M
  echo "$IMAGE_VERSION" >"$VM/image-version"
}

start() {
  local kind=${1:-netplan} extra=""
  case "$kind" in
    netplan) ;;
    networkmanager) extra=" gpuops.backend=networkmanager" ;;
    *) echo "vmctl.sh start: unknown kind $kind (netplan|networkmanager)" >&2; exit 2 ;;
  esac
  build
  for n in 1 2; do
    # A PCI Express root port with a virtio device behind it (real config space: the PCIe and ACS capabilities);
    # vm2 also gets an emulated Intel IOMMU and intel_iommu=on (IOMMU groups with a DMA domain), vm1 none.
    local iommu=() cmdline=""
    if [ "$n" = 2 ]; then iommu=(-device intel-iommu); cmdline=" intel_iommu=on"; fi
    stop_one "$n"
    rm -f "$VM/vm$n.qcow2"
    qemu-img create -q -f qcow2 -F raw -b "$VM/base.img" "$VM/vm$n.qcow2"
    if [ "$n" = 1 ]; then mode=listen; else mode=connect; fi
    qemu-system-x86_64 -machine q35 -accel tcg,tb-size=256 -cpu max -smp 1 -m 512 -vga none \
      -kernel "$VM/vmlinuz" -initrd "$VM/initrd.img" \
      -append "root=/dev/vda rw console=ttyS0 systemd.hostname=vm$n net.ifnames=1$extra$cmdline" "${iommu[@]}" \
      -drive "file=$VM/vm$n.qcow2,if=virtio,format=qcow2" \
      -netdev "user,id=m,hostfwd=tcp:127.0.0.1:$(ssh_port "$n")-:22" \
      -device "virtio-net-pci,netdev=m,addr=0x3,mac=52:54:00:00:00:1$n" \
      -netdev "socket,id=d1,$mode=127.0.0.1:$(cable_port 1)" \
      -device "virtio-net-pci,netdev=d1,addr=0x4,mac=52:54:00:00:01:1$n,speed=100000,duplex=full" \
      -netdev "socket,id=d2,$mode=127.0.0.1:$(cable_port 2)" \
      -device "virtio-net-pci,netdev=d2,addr=0x5,mac=52:54:00:00:02:1$n,speed=100000,duplex=full" \
      -device pcie-root-port,id=rp1,chassis=1,addr=0x6 -device virtio-rng-pci,bus=rp1 \
      -display none -serial "file:$VM/vm$n.console" -monitor "unix:$VM/vm$n.mon,server,nowait" \
      -daemonize -pidfile "$VM/vm$n.pid"
    [ "$n" = 1 ] && sleep 1
  done
  for n in 1 2; do
    for _try in $(seq 1 120); do
      if ssh_vm "$n" true 2>/dev/null; then break; fi
      sleep 2
    done
    ssh_vm "$n" true
  done
}

ssh_vm() {
  local n=$1; shift
  ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
    -i "$VM/id_ed25519" -p "$(ssh_port "$n")" root@127.0.0.1 "$@"
}

stop_one() {
  local pidfile="$VM/vm$1.pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")" || true
    sleep 1
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
  build) build ;;
  start) start "${2:-netplan}" ;;
  stop) stop_one 1; stop_one 2 ;;
  ssh) shift; ssh_vm "$@" ;;
  *) echo "usage: $0 build|start|stop|ssh N CMD" >&2; exit 2 ;;
esac
