#!/bin/sh
# What every task container runs (under docker-init as PID 1). POSIX sh, so that images without
# bash still start; the user's command itself runs in bash when the image has it.
# The Docker executor puts this directory's files in /pai/runtime (a read-only bind mount of the
# task's runtime directory on a local engine, copied in before the start on a remote one), with command.sh (the task's rendered script), environment (the task's runtime
# variables, for sessions that do not inherit the container's env, e.g. sshd) and, when SSH is
# on, authorized_keys.
RUNTIME=/pai/runtime

if [ -s "$RUNTIME/environment" ]; then
    cat "$RUNTIME/environment" >> /etc/environment 2>/dev/null ||
        echo "[pai-runtime] could not write /etc/environment" >&2
fi

if [ -s "$RUNTIME/authorized_keys" ] || [ -n "${PAI_SSH_AUTHORIZED_KEYS:-}" ]; then
    if command -v bash >/dev/null 2>&1; then
        bash "$RUNTIME/ssh.sh"
    else
        sh "$RUNTIME/ssh.sh"
    fi
    status=$?
    # The sshbarrier ran out: the task fails as PAIRuntimeSSHBarrierTimeout, its command never runs.
    [ "$status" -eq 249 ] && exit 249
    [ "$status" -ne 0 ] && echo "[pai-runtime] sshd did not start" >&2
fi

if command -v bash >/dev/null 2>&1; then
    exec bash "$RUNTIME/command.sh"
fi
exec sh "$RUNTIME/command.sh"
