#!/usr/bin/env bash
# Makes sure the message brokers of the forwarder tests run on this machine, starting any that
# stopped with the command this machine's services were started with: NATS with JetStream
# (127.0.0.1:4222), RabbitMQ (127.0.0.1:5672, guest/guest) and Redis (127.0.0.1:6379).
# Idempotent. Prints one line per broker on stderr; exits 0 even when one cannot be had (its
# tests then fail with the broker's own connection error, which names it).
# Run by the tests' vitest globalSetup (so `pnpm test` and .ci/run get it); by hand:
# `bash scripts/ensure-brokers.sh`.
set -uo pipefail
say() { echo "[outboxkit] [brokers] $*" >&2; }

# True when something accepts TCP connections on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # port, seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    listening "$1" && return 0
    sleep 0.1
  done
  return 1
}

ensure() { # name, port, seconds to wait, start command...
  local name=$1 port=$2 seconds=$3
  shift 3
  if listening "$port"; then return 0; fi
  if ! command -v "$1" >/dev/null 2>&1; then
    say "$name is not running on 127.0.0.1:$port and $1 is not installed: its forwarder tests will fail to connect"
    return 0
  fi
  say "starting $name (127.0.0.1:$port): $*"
  "$@" >/dev/null 2>&1 || true
  if wait_for "$port" "$seconds"; then say "$name runs on 127.0.0.1:$port"; else say "$name did not start within ${seconds} s"; fi
}

ensure NATS 4222 20 start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
  -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
ensure Redis 6379 20 redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
  --dir /var/lib/redis --logfile /var/log/redis/ci.log
ensure RabbitMQ 5672 90 rabbitmq-server -detached
exit 0
