#!/bin/bash
# The task's SSH runtime, run by entrypoint.sh (bash when the image has it) before the user's
# command when the launch has authorized keys. It returns once this task's sshd answers and,
# with sshbarrier, once every task's sshd answers, so the command starts after both.
#
# Inputs (the executor puts them there; see jobs.ssh.task_ssh_env / task_ssh_secret_env):
#   /pai/runtime/authorized_keys  public keys allowed in as root (or $PAI_SSH_AUTHORIZED_KEYS)
#   PAI_SSH_PRIVATE_KEY      the job's private key: `ssh <taskrole>-<index>` between tasks (jobssh)
#   PAI_SSH_HOSTS            the job's task names, space-separated (`worker-0 worker-1 ps-0`)
#   PAI_SSH_JOBSSH           1 (default) / 0
#   PAI_SSH_BARRIER          1: wait until every PAI_SSH_BARRIER_HOSTS sshd answers (default 0)
#   PAI_SSH_BARRIER_HOSTS    default PAI_SSH_HOSTS
#   PAI_SSH_BARRIER_TIMEOUT  seconds (default 1800); running out exits 249 (PAIRuntimeSSHBarrierTimeout)
#   PAI_SSH_PORT             port sshd listens on for the job's tasks (default 22)
#   PAI_CONTAINER_HOST_ssh_PORT_LIST  the task's allocated `ssh` port: sshd listens there too, since
#                            the executor publishes each allocated port on the node at the same number
#   PAI_SSH_HOST_PORTS       `worker-0:20001 worker-1:20001`: where each job-mate's sshd listens when
#                            they differ (a job that spans nodes runs on the nodes' own networks, where
#                            each sshd listens on its task's allocated port); unset: PAI_SSH_PORT for all
#   PAI_SSH_ENVIRONMENT      NAME=VALUE lines SSH sessions see, when not root (see below)
# As root (a container): /etc/environment (what SSH sessions see) is written by entrypoint.sh from
# /pai/runtime/environment. As another user (a process task's sandbox, process.py): sshd runs as
# that user, without PAM, and logs in only that user (home: the task's work dir), its host key and
# files in ~/.ssh, the sessions' variables in ~/.ssh/environment.
set -u

RUNTIME=/pai/runtime
PORT=${PAI_SSH_PORT:-22}
PUBLISHED_PORT=${PAI_CONTAINER_HOST_ssh_PORT_LIST:-}
PUBLISHED_PORT=${PUBLISHED_PORT%%,*}
if [ "$(id -u)" = 0 ]; then
    SSH_DIR=/root/.ssh
    SSH_USER=root
    HOST_KEY=/etc/ssh/ssh_host_ed25519_key
    SSHD_LOG=/var/log/pai-sshd.log
    SSHD_OPTIONS=(-o PermitRootLogin=prohibit-password -o PidFile=/run/sshd.pid)
else  # (ssh and sshd take ~ from the account, not from $HOME)
    SSH_USER=$(id -un)
    SSH_DIR=$(getent passwd "$(id -u)" | cut -d: -f6)/.ssh
    HOST_KEY=$SSH_DIR/ssh_host_ed25519_key
    SSHD_LOG=$SSH_DIR/sshd.log
    SSHD_OPTIONS=(-o UsePAM=no -o PermitUserEnvironment=yes -o "PidFile=$SSH_DIR/sshd.pid")
fi

# On stdout, the stream the command writes to: the task log keeps their order (Docker does not
# order lines across stdout and stderr).
log() { echo "[pai-ssh] $*"; }

install_authorized_keys() {
    mkdir -p "$SSH_DIR"
    chmod 700 "$SSH_DIR"
    {
        [ -s "$RUNTIME/authorized_keys" ] && cat "$RUNTIME/authorized_keys"
        [ -n "${PAI_SSH_AUTHORIZED_KEYS:-}" ] && printf '%s\n' "$PAI_SSH_AUTHORIZED_KEYS"
    } >>"$SSH_DIR/authorized_keys"
    chmod 600 "$SSH_DIR/authorized_keys"
}

start_sshd() {
    if [ ! -x /usr/sbin/sshd ]; then
        if [ "$SSH_USER" = root ]; then
            log "this image has no openssh-server: SSH into this task is unavailable"
        else
            log "this node has no openssh-server (Debian: apt-get install openssh-server): SSH into this task is unavailable"
        fi
        return 1
    fi
    if [ "$SSH_USER" = root ]; then
        mkdir -p /run/sshd
        # Containers may not set the audit login uid; a required pam_loginuid would end every session.
        [ -f /etc/pam.d/sshd ] && sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' /etc/pam.d/sshd
    elif [ -n "${PAI_SSH_ENVIRONMENT:-}" ]; then
        printf '%s\n' "$PAI_SSH_ENVIRONMENT" >"$SSH_DIR/environment"
        chmod 600 "$SSH_DIR/environment"
    fi
    # A host key of this task's own, made now: the image (the node) ships none (none we may read).
    [ -s "$HOST_KEY" ] || ssh-keygen -q -t ed25519 -N '' -f "$HOST_KEY"
    local -a listen=(-p "$PORT")
    [ -n "$PUBLISHED_PORT" ] && [ "$PUBLISHED_PORT" != "$PORT" ] && listen+=(-p "$PUBLISHED_PORT")
    # Without -D sshd detaches once it listens.
    /usr/sbin/sshd "${listen[@]}" -h "$HOST_KEY" -E "$SSHD_LOG" "${SSHD_OPTIONS[@]}" \
        -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no -o UseDNS=no || {
        log "sshd did not start:"
        tail -5 "$SSHD_LOG" >&2
        return 1
    }
    local _
    for _ in $(seq 1 100); do
        answers 127.0.0.1 "$PORT" && return 0
        sleep 0.1
    done
    log "sshd does not answer on port $PORT"
    return 1
}

setup_jobssh() {
    printf '%s\n' "$PAI_SSH_PRIVATE_KEY" >"$SSH_DIR/id_ed25519"
    chmod 600 "$SSH_DIR/id_ed25519"
    # ssh takes the first value it reads for each option: each job-mate's own port comes first.
    local peer
    : >"$SSH_DIR/config"
    for peer in ${PAI_SSH_HOST_PORTS:-}; do
        printf 'Host %s\n    Port %s\n' "${peer%:*}" "${peer##*:}" >>"$SSH_DIR/config"
    done
    # The job's tasks are known by name only; their host keys are made at start, so nothing to pin.
    # A job-mate that ended or froze fails the ssh (10 s to answer, 2 minutes of silence in a
    # session, as a frozen node's) instead of hanging the command that ran it (mpirun).
    cat >>"$SSH_DIR/config" <<EOF
Host ${PAI_SSH_HOSTS:-*}
    User $SSH_USER
    Port $PORT
    IdentityFile $SSH_DIR/id_ed25519
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    ConnectTimeout 10
    ServerAliveInterval 30
    ServerAliveCountMax 4
EOF
    chmod 600 "$SSH_DIR/config"
}

# The port host's sshd listens on: its entry in PAI_SSH_HOST_PORTS, else PORT.
port_of() {
    local peer
    for peer in ${PAI_SSH_HOST_PORTS:-}; do
        [ "${peer%:*}" = "$1" ] && { echo "${peer##*:}"; return; }
    done
    echo "$PORT"
}

# Does an sshd answer at host (at its port, or the one given)? (banner check: needs no key)
answers() {
    timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && head -c 4 <&3' "$1" "${2:-$(port_of "$1")}" 2>/dev/null |
        grep -q '^SSH-'
}

# Can we log into host? With the job key that is a real login; without one, the banner.
reachable() {
    if [ -f "$SSH_DIR/id_ed25519" ]; then
        ssh -o BatchMode=yes -o ConnectTimeout=3 "$1" true </dev/null >/dev/null 2>&1
    else
        answers "$1"
    fi
}

barrier() {
    local deadline=$((SECONDS + ${PAI_SSH_BARRIER_TIMEOUT:-1800}))
    local -a pending still
    read -r -a pending <<<"${PAI_SSH_BARRIER_HOSTS:-${PAI_SSH_HOSTS:-}}"
    log "barrier: waiting for ${pending[*]}"
    while [ ${#pending[@]} -gt 0 ]; do
        still=()
        for host in "${pending[@]}"; do
            reachable "$host" || still+=("$host")
        done
        pending=("${still[@]}")
        [ ${#pending[@]} -eq 0 ] && break
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "barrier: timed out waiting for ${pending[*]}"
            exit 249
        fi
        sleep 0.5
    done
    log "barrier: every task answers"
}

install_authorized_keys
start_sshd || exit 1
if [ "${PAI_SSH_JOBSSH:-1}" = 1 ] && [ -n "${PAI_SSH_PRIVATE_KEY:-}" ]; then
    setup_jobssh
fi
if [ "${PAI_SSH_BARRIER:-0}" = 1 ]; then
    barrier
fi
exit 0
