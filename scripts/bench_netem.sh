#!/usr/bin/env bash
# The cost model of docs/distributed.md ("Cost model") checked on a real network stack
# (issue 28): two network namespaces joined by an emulated link of a chosen bandwidth and
# one-way delay, one rank in each, Open MPI's TCP transport between them; the LSTM M and
# char-LSTM training steps (bench/data_parallel.cpp, --no-overlap so that the time
# finish() waits is the whole all-reduce) measured against the model's prediction.
#
#   sudo bash scripts/bench_netem.sh [path/to/recur_bench_data_parallel]
#
# Environment: LINKS (default "10gbit/50us 1gbit/200us": rate / ONE-WAY delay, the model's
# `a`), ROUNDS (5; the medians are printed), STEPS (20 timed steps per run), MODELS
# ("lstm_m char_lstm"), EMULATOR (auto | netem | tun), OVERLAP=1 to also run with the
# all-reduce overlapped with backward.
#
# The link: a veth pair with `tc qdisc add dev X root netem delay D rate R limit L` on both
# ends when the kernel has sch_netem; else (EMULATOR=tun, or auto on a kernel without
# CONFIG_NET_SCH_NETEM) a TUN device in each namespace joined by scripts/tun_link.cpp, a
# user-space emulator with netem's delay and rate rule, built here with c++.
# Also measured, as references: the same namespaces with no emulation, and 2 ranks on the
# shared-memory path (no namespaces, Open MPI's defaults).
#
# Open MPI cannot simply be started as `mpiexec -n 1 ip netns exec A prog : ...`: its
# PMIx server listens on 127.0.0.1 only (PMIx 3 has no unix-socket transport any more) and
# a rank in another namespace cannot reach it. So mpiexec runs inside namespace A and
# starts one daemon per namespace through a launch agent (plm_rsh_agent) that runs
# `ip netns exec NS taskset -c CPU ...`: the hosts are the namespaces' names, the daemons
# reach mpiexec over the link (oob_tcp_if_include), and the ranks use only the TCP BTL on
# the link (`--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include`): no shared
# memory, no loopback. A higher delay visibly lengthens the all-reduce (the table shows it).
#
# Needs root; refuses to run if its namespaces exist; creates nothing outside them
# (beside a temporary directory) and deletes them on exit. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build-bench/bench/recur_bench_data_parallel}")
LINKS=${LINKS:-"10gbit/50us 1gbit/200us"}
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-20}
MODELS=${MODELS:-"lstm_m char_lstm"}
EMULATOR=${EMULATOR:-auto}
OVERLAP=${OVERLAP:-0}
nsA=recur-netem-a nsB=recur-netem-b devA=recur-a devB=recur-b
addrA=10.213.7.1 addrB=10.213.7.2 net=10.213.7.0/30

die() { echo "bench_netem.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it creates network namespaces)"
[ -x "$bin" ] || die "no benchmark binary $bin (build the target recur_bench_data_parallel with -DRECUR_BUILD_BENCH=ON)"
for ns in $nsA $nsB; do
  ip netns list | awk '{print $1}' | grep -qx "$ns" && die "namespace $ns exists already; delete it (ip netns del $ns) if it is a leftover"
done

work=$(mktemp -d)
created=() emulator_pid=
cleanup() {
  if [ -n "$emulator_pid" ]; then kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; fi
  for ns in "${created[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# "10gbit" -> bit/s, "50us" -> us (the units tc takes).
bits() { awk -v s="$1" 'BEGIN { n = s + 0; u = tolower(s); sub(/^[0-9.]+/, "", u);
  m = u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : u == "bit" ? 1 : -1;
  if (m < 0) exit 1; printf "%.0f", n * m }' || die "rate '$1': use bit, kbit, mbit or gbit"; }
micros() { awk -v s="$1" 'BEGIN { n = s + 0; u = tolower(s); sub(/^[0-9.]+/, "", u);
  m = u == "us" ? 1 : u == "ms" ? 1e3 : u == "s" ? 1e6 : -1;
  if (m < 0) exit 1; printf "%g", n * m }' || die "delay '$1': use us, ms or s"; }

for ns in $nsA $nsB; do
  ip netns add $ns
  created+=($ns)
  ip -n $ns link set lo up
  ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1  # no router solicitations on the link
done

# netem if the kernel has it, else the TUN emulator.
ip link add $devA netns $nsA type veth peer name $devB netns $nsB
kind=tun
if [ "$EMULATOR" != tun ] && tc -n $nsA qdisc add dev $devA root netem delay 0us 2>/dev/null; then
  kind=netem
  tc -n $nsA qdisc del dev $devA root
elif [ "$EMULATOR" = netem ]; then
  die "this kernel has no sch_netem (tc qdisc ... netem failed); EMULATOR=tun uses the user-space link"
fi
if [ $kind = netem ]; then
  ip -n $nsA addr add $addrA/30 dev $devA
  ip -n $nsB addr add $addrB/30 dev $devB
else
  ip -n $nsA link del $devA
  c++ -O2 -std=c++20 -pthread scripts/tun_link.cpp -o "$work/tun_link"
  ip -n $nsA tuntap add dev $devA mode tun
  ip -n $nsB tuntap add dev $devB mode tun
  # 64 KB packets, as TCP's segmentation offload hands a veth (and netem) 64 KB skbs.
  ip -n $nsA link set $devA mtu 65535
  ip -n $nsB link set $devB mtu 65535
  ip -n $nsA addr add $addrA peer $addrB dev $devA
  ip -n $nsB addr add $addrB peer $addrA dev $devB
fi
ip -n $nsA link set $devA up
ip -n $nsB link set $devB up

# link RATE DELAY ("none none": no emulation).
link() {
  if [ $kind = netem ]; then
    for end in "$nsA $devA" "$nsB $devB"; do
      set -- $end "${@}"
      tc -n $1 qdisc del dev $2 root 2>/dev/null || true
      # netem holds every packet in flight in its queue for the delay; `limit` counts
      # packets (default 1000) and must exceed one direction's in-flight window.
      [ "$3" = none ] || tc -n $1 qdisc add dev $2 root netem delay "$4" rate "$3" limit 100000
      shift 2
    done
  else
    if [ -n "$emulator_pid" ]; then kill "$emulator_pid"; wait "$emulator_pid" 2>/dev/null || true; fi
    local rate=0 delay=0
    [ "$1" = none ] || { rate=$(bits "$1"); delay=$(micros "$2"); }
    "$work/tun_link" $nsA $devA $nsB $devB "$rate" "$delay" $((64 << 20)) 2>"$work/tun_link.log" &
    emulator_pid=$!
    sleep 0.3
    kill -0 $emulator_pid 2>/dev/null || die "tun_link failed: $(cat "$work/tun_link.log")"
  fi
}

# The link's round trip of 1 byte and a 16 MiB transfer, if python3 is there.
cat >"$work/probe.py" <<'EOF'
import socket, sys, time
role, host, port = sys.argv[1], sys.argv[2], 5599
if role == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((host, port)); s.listen(1)
    c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(200): c.recv(1); c.sendall(b"x")
    n = 0
    while n < 16 << 20: n += len(c.recv(1 << 20))
    c.sendall(b"y")
else:
    time.sleep(0.3)
    c = socket.create_connection((host, port)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtt = []
    for _ in range(200):
        t = time.perf_counter(); c.sendall(b"x"); c.recv(1); rtt.append(time.perf_counter() - t)
    t = time.perf_counter(); c.sendall(b"\0" * (16 << 20)); c.recv(1); dt = time.perf_counter() - t
    print(f"round trip median {sorted(rtt)[100] * 1e6:.0f} us, 16 MiB at {16 * 8 * 1.048576 / dt / 1e3:.2f} Gbit/s")
EOF
probe() {
  command -v python3 >/dev/null || return 0
  ip netns exec $nsB timeout 20 python3 "$work/probe.py" server $addrB &
  echo "  link check: $(ip netns exec $nsA timeout 20 python3 "$work/probe.py" client $addrB)"
  wait $! || true
}

cat >"$work/agent" <<EOF
#!/bin/sh
# Open MPI's launch agent: "agent HOST COMMAND..." runs COMMAND in namespace HOST, on one CPU.
host=\$1; shift
cpu=0; [ "\$host" = $nsB ] && cpu=1
exec ip netns exec "\$host" taskset -c \$cpu /bin/sh -c "\$*"
EOF
chmod +x "$work/agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
run() {  # run WHERE MODEL [bench options]: prints the bench's line
  local where=$1 model=$2
  shift 2
  if [ "$where" = shm ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE mpiexec -n 2 --bind-to core \
      "$bin" --model "$model" --threads 1 --steps "$STEPS" "$@"
  else
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ip netns exec $nsA mpiexec -H $nsA,$nsB -n 2 --bind-to none \
      --mca plm rsh --mca plm_rsh_agent "$work/agent" --mca oob_tcp_if_include $net \
      --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include $net -x OPENBLAS_NUM_THREADS \
      "$bin" --model "$model" --threads 1 --steps "$STEPS" "$@"
  fi
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
results="$work/results"
: >"$results"
echo "emulator: $kind; $ROUNDS rounds of $STEPS steps; the machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
# no-overlap: --no-overlap --barrier-before-finish (finish() waits for the all-reduce
# alone: the ranks meet first, so a rank slower to compute adds nothing); overlap: the
# reducer's default (the all-reduce started during backward; the wait is what it did not hide).
variants=(no-overlap)
[ "$OVERLAP" = 1 ] && variants+=(overlap)
flags() { [ "$1" = overlap ] || echo "--no-overlap --barrier-before-finish"; }
for spec in shm none $LINKS; do
  rate=${spec%/*} delay=${spec#*/}
  [ "$spec" = shm ] || [ "$spec" = none ] && rate=$spec delay=$spec
  [ "$spec" = shm ] || link "$rate" "$delay"
  echo "link: $spec"
  [ "$spec" = shm ] || probe
  for variant in "${variants[@]}"; do
    for model in $MODELS; do
      for ((r = 0; r < ROUNDS; ++r)); do
        line=$(run "$spec" "$model" $(flags $variant))
        echo "  $variant: $line"
        # ms/step, all-reduce share (%), bytes
        echo "$spec $variant $model $(echo "$line" |
          sed -n 's/.*: \([0-9.]*\) ms\/step.*all-reduce \([0-9.]*\)% of a step, \([0-9]*\) bytes.*/\1 \2 \3/p')" >>"$results"
      done
    done
  done
done

# The prediction for p = 2 with the link's one-way delay a and rate W, C = step - wait of
# the same runs (the compute and the rest of the step), S the bytes all-reduced:
#   ring (docs' formula):        T = 2 (p-1)/p S/W + 2 (p-1) a           = S/W + 2a
#   Open MPI's in-place Iallreduce (binomial reduce then broadcast, each of S bytes):
#                                T = 2 ceil(log2 p) (S/W + a)             = 2 S/W + 2a
# (the docs' "The model on an emulated network" says which one holds and why).
echo
printf '%-16s %-12s %-10s %9s %9s %9s %11s %11s %8s %8s\n' link variant model "step ms" "wait ms" "C ms" \
  "ring T ms" "binom T ms" "ring" "binom"
for spec in shm none $LINKS; do
  for variant in "${variants[@]}"; do
    for model in $MODELS; do
      rows=$(awk -v s="$spec" -v v="$variant" -v m="$model" '$1 == s && $2 == v && $3 == m' "$results")
      [ -n "$rows" ] || continue
      step=$(echo "$rows" | awk '{ print $4 }' | median)
      wait_ms=$(echo "$rows" | awk '{ print $4 * $5 / 100 }' | median)
      bytes=$(echo "$rows" | awk 'NR == 1 { print $6 }')
      rate=0 delay=0
      case $spec in shm | none) ;; *) rate=$(bits "${spec%/*}") delay=$(micros "${spec#*/}") ;; esac
      awk -v l="$spec" -v v="$variant" -v m="$model" -v step="$step" -v w="$wait_ms" -v S="$bytes" -v W="$rate" \
        -v a="$delay" 'BEGIN {
          C = step - w
          if (W > 0) { ring = 1e3 * (8 * S / W) + 2 * a / 1e3; binom = 2 * 1e3 * (8 * S / W) + 2 * a / 1e3 }
          if (W > 0) printf "%-16s %-12s %-10s %9.2f %9.2f %9.2f %11.2f %11.2f %7.0f%% %7.0f%%\n", l, v, m, step, w, C,
            ring, binom, 100 * (ring - w) / w, 100 * (binom - w) / w
          else printf "%-16s %-12s %-10s %9.2f %9.2f %9.2f\n", l, v, m, step, w, C }'
    done
  done
done
echo "(wait: the median time finish() waited per step; ring / binom: (predicted T - measured wait) / measured wait;"
echo " the predicted step is C + T. The model holds for --no-overlap; with overlap the wait is what backward did not hide.)"
