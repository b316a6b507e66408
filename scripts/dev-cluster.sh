#!/usr/bin/env bash
# A cluster of several Docker nodes on this one machine: for tests, benches and trying jobs that
# span nodes.
#
#   scripts/dev-cluster.sh up N [--name NAME] [--subnet A.B.C.0/24] [--cpus C] [--memory-mb M]
#                               [--image IMAGE] [--no-register]
#                               [--slurm [--docker] [--gpus G] [--gpu-type TYPE]]
#   scripts/dev-cluster.sh status     [--name NAME]
#   scripts/dev-cluster.sh stop-node I [--name NAME]   # engine I goes away (its tasks with it)
#   scripts/dev-cluster.sh start-node I [--name NAME]  # ... and comes back
#   scripts/dev-cluster.sh freeze-node I [--name NAME] # engine I hangs (SIGSTOP): its tasks run on, it answers nothing
#   scripts/dev-cluster.sh thaw-node I [--name NAME]   # ... and answers again (SIGCONT)
#   scripts/dev-cluster.sh restart-slurmctld [--name NAME] [--forget-jobs]   # --slurm: slurmctld stops and
#                               starts again (--forget-jobs: knowing no job, as after MinJobAge)
#   scripts/dev-cluster.sh down       [--name NAME]
#
# `up` makes a bridge NAME-br in the host namespace (the subnet's .1) and, for node i = 1..N, a
# network namespace NAME-i plugged into it at the subnet's .(i+1), with a dockerd of its own inside
# (socket /run/pai-dev-cluster/NAME/i/docker.sock). Tasks on different nodes therefore really cross
# a network, and every node's tasks, sshd and ports live at its own address. The base image is
# copied into each engine (docker save | docker load: there is no registry here) and each engine is
# registered as node NAME-i in the portal's database (manage.py addnode) unless --no-register.

# With --slurm the nodes run Slurm instead of Docker: slurmctld on the host (listening on the
# bridge's .1), one slurmd per node namespace (its own UTS namespace too, so `hostname` is the node's
# name), G fake GPUs of TYPE per node through GRES (character devices like /dev/null: Slurm hands
# out their indices in CUDA_VISIBLE_DEVICES) and one partition named NAME holding every node. The
# configuration is $STATE/slurm/slurm.conf: point the portal at it with PAI_SLURM_CONF (`status`
# prints it), then `manage.py createvc VC --slurm-partition NAME`. One munged serves every namespace
# (its socket is a path); `up` starts one only if none answers, and `down` leaves it running (other
# Slurm clusters on the machine may use it by then).
#
# --slurm --docker: each Slurm node also gets a dockerd in its namespace, as above (the base image
# loaded), where its Slurm steps run their tasks as containers; `status` adds each engine's URL, and
# each is registered as the Slurm node's engine (manage.py addnode NAME --executor slurm --docker-url
# URL) unless --no-register. With fake GPUs, each engine finds a no-op nvidia-container-runtime-hook
# on its PATH: it then accepts the GPU requests of containers (the devices stay Slurm's fakes).
#
# Everything `up` makes is written down, as it is made, in $PAI_DEV_CLUSTER_DIR/NAME/made (default
# var/dev-cluster/NAME); `down` undoes exactly those lines, newest first, and nothing else.
# dockerd only ever starts inside a namespace of its own (a second dockerd in the host namespace
# would take over docker0).
#
# Needs root, ip (iproute2), iptables, nsenter (util-linux) and dockerd. Python for the
# registration: $PAI_PYTHON, else .venv/bin/python, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKER=/usr/bin/docker
NAME=paidev
SUBNET=10.250.0.0/24
CPUS=2
MEMORY_MB=4096
IMAGE=${PAI_DEFAULT_IMAGE:-pai-portal/base:latest}
REGISTER=1
SLURM=0
SLURM_DOCKER=0
FORGET_JOBS=0
GPUS=4
GPU_TYPE=p100
RUN_ROOT=/run/pai-dev-cluster

die() { echo "dev-cluster: $*" >&2; exit 1; }
say() { echo "dev-cluster: $*" >&2; }

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

python_bin() {
    if [ -n "${PAI_PYTHON:-}" ]; then echo "$PAI_PYTHON"
    elif [ -x .venv/bin/python ]; then echo .venv/bin/python
    else echo python3; fi
}

# ---- arguments -------------------------------------------------------------------------------
[ $# -ge 1 ] || usage
COMMAND=$1; shift
COUNT=""; NODE=""
case "$COMMAND" in
    up) [ $# -ge 1 ] || usage; COUNT=$1; shift ;;
    stop-node|start-node|freeze-node|thaw-node) [ $# -ge 1 ] || usage; NODE=$1; shift ;;
    down|status|restart-slurmctld) ;;
    *) usage ;;
esac
while [ $# -gt 0 ]; do
    case "$1" in
        --name) NAME=$2; shift 2 ;;
        --subnet) SUBNET=$2; shift 2 ;;
        --cpus) CPUS=$2; shift 2 ;;
        --memory-mb) MEMORY_MB=$2; shift 2 ;;
        --image) IMAGE=$2; shift 2 ;;
        --no-register) REGISTER=0; shift ;;
        --slurm) SLURM=1; shift ;;
        --docker) SLURM_DOCKER=1; shift ;;
        --gpus) GPUS=$2; shift 2 ;;
        --gpu-type) GPU_TYPE=$2; shift 2 ;;
        --forget-jobs) FORGET_JOBS=1; shift ;;
        *) die "unknown option $1" ;;
    esac
done
# Interface names hold 15 characters: NAME-br, NAMEh12 and NAMEn12 must fit.
[[ "$NAME" =~ ^[a-z][a-z0-9]{0,9}$ ]] || die "--name: 1-10 lowercase letters and digits, starting with a letter"
[[ "$GPU_TYPE" =~ ^[a-z0-9]{1,16}$ ]] || die "--gpu-type: 1-16 lowercase letters and digits"
[[ "$GPUS" =~ ^[0-9]$ ]] || die "--gpus: 0 to 9 per node"
for value in "$CPUS" "$MEMORY_MB" ${COUNT:+"$COUNT"} ${NODE:+"$NODE"}; do
    [[ "$value" =~ ^[1-9][0-9]*$ ]] || die "expected a positive number, got '$value'"
done
[ -z "$COUNT" ] || [ "$COUNT" -le 50 ] || die "at most 50 nodes"
[ "$SLURM_DOCKER" = 0 ] || [ "$SLURM" = 1 ] || die "--docker goes with --slurm (without it every node has an engine)"
# Whether the nodes get engines: always without --slurm, with --slurm only when --docker.
ENGINES=1
[ "$SLURM" = 1 ] && [ "$SLURM_DOCKER" = 0 ] && ENGINES=0

STATE=${PAI_DEV_CLUSTER_DIR:-var/dev-cluster}/$NAME
STATE=$(realpath -m "$STATE")
MADE=$STATE/made
BRIDGE=$NAME-br
# The other commands work on the subnet `up` chose.
if [ "$COMMAND" != up ] && [ -s "$STATE/subnet" ]; then
    SUBNET=$(cat "$STATE/subnet")
fi
[[ "$SUBNET" =~ ^([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})\.0/24$ ]] || die "--subnet: give a /24 like 10.250.0.0/24"
PREFIX=${BASH_REMATCH[1]}

node_name() { echo "$NAME-$1"; }
node_ip() { echo "$PREFIX.$(($1 + 1))"; }
node_run_dir() { echo "$RUN_ROOT/$NAME/$1"; }
node_socket() { echo "$(node_run_dir "$1")/docker.sock"; }
node_url() { echo "unix://$(node_socket "$1")"; }

record() { echo "$*" >>"$MADE"; }

engine_answers() { "$DOCKER" -H "$(node_url "$1")" version >/dev/null 2>&1; }

# ---- one engine ------------------------------------------------------------------------------
start_engine() {
    local i=$1 run data
    run=$(node_run_dir "$i")
    data=$STATE/node-$i
    mkdir -p "$run" "$data"
    local path=$PATH
    if [ -s "$STATE/kind" ] && [ "$GPUS" -gt 0 ]; then  # Slurm's fake GPUs: see --docker above
        mkdir -p "$STATE/fake-nvidia"
        printf '#!/bin/sh\nexit 0\n' >"$STATE/fake-nvidia/nvidia-container-runtime-hook"
        chmod 755 "$STATE/fake-nvidia/nvidia-container-runtime-hook"
        path=$STATE/fake-nvidia:$PATH
    fi
    # setsid: the engine outlives this script; nsenter: it lives in the node's namespace only.
    PATH=$path nsenter --net="/run/netns/$(node_name "$i")" setsid dockerd \
        -H "$(node_url "$i")" --data-root "$data/data" --exec-root "$run/exec" --pidfile "$run/dockerd.pid" \
        </dev/null >>"$data/dockerd.log" 2>&1 &
    local _
    for _ in $(seq 1 120); do
        engine_answers "$i" && return 0
        sleep 0.5
    done
    tail -20 "$data/dockerd.log" >&2
    die "the engine of node $i did not start (log: $data/dockerd.log)"
}

stop_engine() {
    local i=$1 pidfile pid _
    pidfile=$(node_run_dir "$i")/dockerd.pid
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    # Only the dockerd this cluster started: its pid file, and that process still running dockerd.
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]; then
        kill -TERM "$pid"
        for _ in $(seq 1 120); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$pidfile"
}

# ---- up --------------------------------------------------------------------------------------
make_bridge() {
    ip link show "$BRIDGE" >/dev/null 2>&1 && die "interface $BRIDGE exists already"
    if ip -4 route show | grep -q "^$PREFIX\.0/24 "; then
        die "subnet $SUBNET is in use on this machine; choose another with --subnet"
    fi
    ip link add "$BRIDGE" type bridge
    record bridge "$BRIDGE"
    ip addr add "$PREFIX.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    # Docker sets the host's FORWARD policy to DROP, and with br_netfilter bridged frames pass
    # through it: let the nodes talk to each other across the bridge.
    iptables -w -I FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT
    record iptables FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT
}

make_node() {
    local i=$1 netns host_end node_end
    netns=$(node_name "$i")
    host_end=${NAME}h$i
    node_end=${NAME}n$i
    ip netns list | grep -qw "^$netns" && die "network namespace $netns exists already"
    ip netns add "$netns"
    record netns "$netns"
    ip link add "$host_end" type veth peer name "$node_end"
    record link "$host_end"
    ip link set "$host_end" master "$BRIDGE" up
    ip link set "$node_end" netns "$netns"
    ip -n "$netns" addr add "$(node_ip "$i")/24" dev "$node_end"
    ip -n "$netns" link set "$node_end" up
    ip -n "$netns" link set lo up
    [ "$ENGINES" = 1 ] || return 0
    record engine "$i"
    start_engine "$i"
}

# ---- slurm -----------------------------------------------------------------------------------
SLURM_DIR=$STATE/slurm
export SLURM_CONF=$SLURM_DIR/slurm.conf

munge_answers() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

# Start a daemon in its own session, its pid in $SLURM_DIR/run/NAME.pid (what `down` stops).
launch_daemon() {
    local name=$1; shift
    setsid "$@" </dev/null >>"$SLURM_DIR/log/$name.out" 2>&1 &
    echo $! >"$SLURM_DIR/run/$name.pid"
}

stop_daemon() {
    local name=$1 comm=$2 pidfile pid _
    pidfile=$SLURM_DIR/run/$name.pid
    [ -s "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    # nsenter/unshare exec the daemon, so the recorded pid is the daemon once it runs.
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ]; then
        kill -TERM "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$pidfile"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }

write_slurm_conf() {
    local last=$((COUNT + 1)) gres="" g
    [ "$GPUS" -gt 0 ] && gres="Gres=gpu:$GPU_TYPE:$GPUS"
    cat >"$SLURM_CONF" <<CONF
# scripts/dev-cluster.sh up $COUNT --slurm --name $NAME
ClusterName=$NAME
SlurmctldHost=$(hostname -s)($PREFIX.1)
SlurmctldPort=$(free_port)
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.daemon.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd-%n.daemon.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd-%n.log
# No cgroups: nothing to set up on the machine (a real cluster would use proctrack/cgroup).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
# Heterogeneous jobs (one component per task role) are started by the backfill scheduler only.
SchedulerParameters=batch_sched_delay=0,bf_interval=1
MpiDefault=none
MinJobAge=600
ReturnToService=2
MailProg=/bin/true
AccountingStorageType=accounting_storage/none
GresTypes=gpu
NodeName=$NAME-[1-$COUNT] NodeAddr=$(seq -s, -f "$PREFIX.%g" 2 "$last") CPUs=$CPUS RealMemory=$MEMORY_MB $gres
PartitionName=$NAME Nodes=$NAME-[1-$COUNT] Default=YES MaxTime=INFINITE State=UP
CONF
    if [ "$GPUS" -gt 0 ]; then
        printf 'AutoDetect=off\nNodeName=%s Name=gpu Type=%s File=%s/fakegpu/nvidia[0-%d]\n' \
            "$NAME-[1-$COUNT]" "$GPU_TYPE" "$SLURM_DIR" $((GPUS - 1)) >"$SLURM_DIR/gres.conf"
        # gres/gpu wants character devices (plain files leave CUDA_VISIBLE_DEVICES empty): /dev/null's.
        for g in $(seq 0 $((GPUS - 1))); do mknod "$SLURM_DIR/fakegpu/nvidia$g" c 1 3; done
    else
        : >"$SLURM_DIR/gres.conf"
    fi
}

start_slurm() {
    local i _
    mkdir -p "$SLURM_DIR"/{state,spool,log,run,fakegpu}
    record slurm-files
    write_slurm_conf
    if ! munge_answers; then
        if [ ! -s /etc/munge/munge.key ]; then  # (the munge package makes one; a bare install may not)
            mungekey --create --keyfile=/etc/munge/munge.key && chown munge:munge /etc/munge/munge.key
            chmod 0400 /etc/munge/munge.key
        fi
        install -d -o munge -g munge -m 0755 /run/munge
        # Not recorded: `down` leaves it running, as every Slurm on this machine (another dev
        # cluster, slurm-local.sh) uses the one munged that answers.
        launch_daemon munged setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground
        for _ in $(seq 1 50); do munge_answers && break; sleep 0.1; done
        munge_answers || die "munged does not answer (log: $SLURM_DIR/log/munged.out)"
    fi
    launch_daemon slurmctld /usr/sbin/slurmctld -D -f "$SLURM_CONF"
    record daemon slurmctld slurmctld
    for i in $(seq 1 "$COUNT"); do
        # nsenter, not `ip netns exec` (which remounts /sys and hides the cgroup mounts slurmd reads).
        launch_daemon "slurmd-$i" nsenter --net="/run/netns/$(node_name "$i")" unshare --uts \
            sh -c "hostname $(node_name "$i") && exec /usr/sbin/slurmd -D -f $SLURM_CONF -N $(node_name "$i")"
        record daemon "slurmd-$i" slurmd
    done
    record slurm-jobs
    for _ in $(seq 1 300); do
        [ "$(sinfo -h -p "$NAME" -o %t 2>/dev/null | sort -u)" = idle ] && return 0
        sleep 0.1
    done
    tail -5 "$SLURM_DIR"/log/*.log >&2 || true
    die "the Slurm nodes are not idle: $(sinfo -h -N -p "$NAME" -o '%N %t' 2>&1 | xargs)"
}

# slurmctld goes away and comes back with what it saved (StateSaveLocation): jobs survive it.
# --forget-jobs: it comes back knowing no job (-c), as it forgets finished ones after MinJobAge.
restart_slurmctld() {
    local _ clear=()
    [ -s "$STATE/kind" ] || die "cluster $NAME runs no Slurm"
    [ "$FORGET_JOBS" = 1 ] && clear=(-c)
    stop_daemon slurmctld slurmctld
    launch_daemon slurmctld /usr/sbin/slurmctld -D "${clear[@]}" -f "$SLURM_CONF"
    for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.1; done
    scontrol ping 2>/dev/null | grep -q UP || die "slurmctld did not come back (log: $SLURM_DIR/log/slurmctld.log)"
    [ "$FORGET_JOBS" = 1 ] || return 0
    # It forgot the nodes' state too: they are idle again once each slurmd has registered.
    for _ in $(seq 1 300); do
        [ "$(sinfo -h -p "$NAME" -o %t 2>/dev/null | sort -u)" = idle ] && return 0
        sleep 0.1
    done
    die "the Slurm nodes are not idle: $(sinfo -h -N -p "$NAME" -o '%N %t' 2>&1 | xargs)"
}

# Jobs still in the partition go before the daemons (their steps would outlive slurmd).
cancel_slurm_jobs() {
    local _
    scancel -p "$NAME" 2>/dev/null || return 0
    for _ in $(seq 1 100); do
        [ -z "$(squeue -h -p "$NAME" -t running,completing 2>/dev/null)" ] && return 0
        sleep 0.1
    done
}

cmd_up() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces, dockerd)"
    local tool
    for tool in ip iptables nsenter setsid; do
        command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (apt-get install iproute2 iptables util-linux)"
    done
    if [ "$SLURM" = 1 ]; then
        for tool in slurmctld slurmd sinfo munged mknod; do
            command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (apt-get install slurm-wlm munge)"
        done
    fi
    if [ "$ENGINES" = 1 ]; then
        command -v dockerd >/dev/null 2>&1 || die "dockerd is missing (apt-get install docker.io)"
    fi
    [ -s "$MADE" ] && die "cluster $NAME is up already ($MADE); run: $0 down --name $NAME"
    [ "$ENGINES" = 0 ] || "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1 || die "image $IMAGE is not on the local engine (make image)"
    mkdir -p "$STATE"
    : >"$MADE"
    echo "$SUBNET" >"$STATE/subnet"
    trap 'say "up failed; undoing what it made"; cmd_down' EXIT
    [ "$SLURM" = 0 ] || echo slurm >"$STATE/kind"
    make_bridge
    local i
    for i in $(seq 1 "$COUNT"); do
        make_node "$i"
    done
    if [ "$SLURM" = 1 ]; then
        start_slurm
        [ "$ENGINES" = 0 ] || load_image
        if [ "$ENGINES" = 1 ] && [ "$REGISTER" = 1 ]; then
            for i in $(seq 1 "$COUNT"); do
                "$(python_bin)" manage.py addnode "$(node_name "$i")" --executor slurm --docker-url "$(node_url "$i")" \
                    --address "$(node_ip "$i")" >&2
                record node "$(node_name "$i")"
            done
        fi
        trap - EXIT
        cmd_status
        return 0
    fi
    load_image
    if [ "$REGISTER" = 1 ]; then
        local python
        python=$(python_bin)
        for i in $(seq 1 "$COUNT"); do
            "$python" manage.py addnode "$(node_name "$i")" --executor docker --docker-url "$(node_url "$i")" \
                --address "$(node_ip "$i")" --cpus "$CPUS" --memory-mb "$MEMORY_MB" >&2
            record node "$(node_name "$i")"
        done
    fi
    trap - EXIT
    cmd_status
}

# The base image copied into every engine (docker save | docker load: there is no registry here).
load_image() {
    local i pids=() pid
    say "loading $IMAGE into $COUNT engines"
    "$DOCKER" save "$IMAGE" -o "$STATE/image.tar"
    for i in $(seq 1 "$COUNT"); do
        "$DOCKER" -H "$(node_url "$i")" load -q -i "$STATE/image.tar" >/dev/null &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    rm -f "$STATE/image.tar"
}

# ---- down ------------------------------------------------------------------------------------
# What a stopped dockerd leaves mounted (its namespace file under exec-root), deepest first.
unmount_under() {
    local dir mount
    for dir in "$@"; do
        awk -v dir="$dir/" 'index($2, dir) == 1 {print $2}' /proc/mounts | sort -r | while read -r mount; do
            umount "$mount" || umount -l "$mount"
        done
    done
}

undo() {
    local kind=$1; shift
    case "$kind" in
        node) "$(python_bin)" manage.py removenode "$1" >&2 || say "node $1 stays registered (see above)" ;;
        engine) stop_engine "$1"; unmount_under "$(node_run_dir "$1")" "$STATE/node-$1"
            rm -rf "$(node_run_dir "$1")" "$STATE/node-$1" ;;
        slurm-jobs) cancel_slurm_jobs ;;
        daemon) stop_daemon "$1" "$2" ;;
        slurm-files) rm -rf "$SLURM_DIR" ;;
        link) ip link del "$1" 2>/dev/null || true ;;  # gone with its namespace, usually
        netns) ip netns del "$1" 2>/dev/null || true ;;
        iptables) iptables -w -D "$@" 2>/dev/null || true ;;
        bridge) ip link del "$1" 2>/dev/null || true ;;
        *) say "unknown line in $MADE: $kind $*" ;;
    esac
}

cmd_down() {
    trap - EXIT
    if [ ! -s "$MADE" ]; then
        say "cluster $NAME is not up (no $MADE)"
        return 0
    fi
    local line
    # Newest first: nodes are unregistered before their engines stop, engines stop before their
    # namespaces go, the bridge goes last.
    tac "$MADE" | while read -r line; do
        # shellcheck disable=SC2086 # the recorded words, split as they were written
        undo $line || say "could not undo '$line'"
    done
    rm -f "$MADE" "$STATE/subnet" "$STATE/kind"
    rm -rf "$STATE/fake-nvidia"
    rmdir "$RUN_ROOT/$NAME" "$RUN_ROOT" 2>/dev/null || true
    rmdir "$STATE" 2>/dev/null || true
    say "cluster $NAME is down"
}

# ---- the others ------------------------------------------------------------------------------
engines() { [ -s "$MADE" ] && awk '$1 == "engine" {print $2}' "$MADE"; }

cmd_status() {
    [ -s "$MADE" ] || { say "cluster $NAME is not up"; return 1; }
    local i state
    if [ -s "$STATE/kind" ]; then
        # name, "slurm", address, Slurm's state of the node[, its engine's URL with --docker] (one line per
        # node); then the configuration
        for i in $(awk '$1 == "netns" {sub(/.*-/, "", $2); print $2}' "$MADE"); do
            state=$(sinfo -h -N -n "$(node_name "$i")" -o %t 2>/dev/null | head -n 1)
            echo "$(node_name "$i") slurm $(node_ip "$i") ${state:-unknown}$(engines | grep -qx "$i" && echo " $(node_url "$i")")"
        done
        echo "SLURM_CONF=$SLURM_CONF"
        return 0
    fi
    for i in $(engines); do
        if engine_answers "$i"; then state=up; else state=down; fi
        # name, engine URL, address, engine state: one line per node (the tests read these)
        echo "$(node_name "$i") $(node_url "$i") $(node_ip "$i") $state"
    done
}

# SIGSTOP / SIGCONT to the engine this cluster started (its pid file, the process still dockerd).
signal_engine() {
    local i=$1 signal=$2 pidfile pid
    pidfile=$(node_run_dir "$i")/dockerd.pid
    [ -s "$pidfile" ] || die "the engine of node $i is not running"
    pid=$(cat "$pidfile")
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] || die "the engine of node $i is not running"
    kill "-$signal" "$pid"
}

known_node() { engines | grep -qx "$1" || die "cluster $NAME has no node $1"; }

case "$COMMAND" in
    up) cmd_up ;;
    down) cmd_down ;;
    restart-slurmctld) restart_slurmctld; say "slurmctld restarted" ;;
    status) cmd_status ;;
    stop-node) known_node "$NODE"; stop_engine "$NODE"; say "engine of node $NODE stopped" ;;
    freeze-node) known_node "$NODE"; signal_engine "$NODE" STOP; say "engine of node $NODE frozen" ;;
    thaw-node) known_node "$NODE"; signal_engine "$NODE" CONT; say "engine of node $NODE thawed" ;;
    start-node)
        known_node "$NODE"
        if engine_answers "$NODE"; then say "engine of node $NODE is running already"; else start_engine "$NODE"; fi
        ;;
esac
