#!/usr/bin/env bash
# make demo: start the extender and the simulated fleet of the reference
# scenario on loopback, then let neighborly-demo send kube-scheduler's requests
# and print the story. Then the incident (issue 26): the fleet streams the seed's
# incident over time and neighborlyctl shows who is hurting whom, the advice for
# the article service, node-1's memory pressure and the proposed move.
# Everything stops when the demo ends.
set -euo pipefail
build=${1:-build/default}
scenario=${SCENARIO:-deploy/examples/content-platform.yaml}
pods=${PODS:-deploy/examples/content-platform-incoming.json}
incident=${INCIDENT:-deploy/examples/content-platform-incident.yaml}
logdir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$logdir"
}
trap cleanup EXIT

# Plaintext telemetry, explicitly: everything stays on loopback (docs/security.md).
# The demo learns workload profiles from 5 replica-windows instead of 30, so
# that the third pod's sibling is trusted within seconds (docs/scoring.md, section 8).
printf 'model:\n  workloads:\n    confidentWindows: 5\n' >"$logdir/extender.yaml"
"$build/extender/neighborly-extender" --config "$logdir/extender.yaml" \
  --http-address 127.0.0.1:0 --grpc-address 127.0.0.1:0 \
  --grpc-insecure-plaintext --log-level warn >/dev/null 2>"$logdir/extender.log" &
pids+=($!)

# Wait for the line "listening http=HOST:PORT grpc=HOST:PORT".
for _ in $(seq 1 100); do
  line=$(grep -m1 'listening http=' "$logdir/extender.log" || true)
  [ -n "$line" ] && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "demo: the extender exited:"; cat "$logdir/extender.log"; exit 1
  fi
  sleep 0.1
done
if [ -z "${line:-}" ]; then echo "demo: the extender did not start:"; cat "$logdir/extender.log"; exit 1; fi
http=$(sed -E 's/.*http=([^ ]+).*/\1/' <<<"$line")
grpc=$(sed -E 's/.*grpc=([^ ]+).*/\1/' <<<"$line")

"$build/node-agent/neighborly-agent" --simulate "$scenario" --extender "$grpc" --interval 1s \
  --insecure-plaintext --log-level warn 2>"$logdir/agent.log" &
pids+=($!)

echo "Neighborly demo: the content platform ($scenario)"
echo "extender on http://$http (scheduler + operator API) and $grpc (telemetry); simulated fleet streaming"
echo
if ! "$build/tools/demo/neighborly-demo" --server "http://$http" --scenario "$scenario" --pods "$pods"; then
  echo "--- extender log"; cat "$logdir/extender.log"; echo "--- agent log"; cat "$logdir/agent.log"
  exit 1
fi

# --- The incident, over time (issue 26) ----------------------------------------
kill "${pids[1]}" 2>/dev/null || true
"$build/node-agent/neighborly-agent" --simulate "$incident" --extender "$grpc" --interval 500ms \
  --insecure-plaintext --log-level warn 2>"$logdir/incident.log" &
pids+=($!)
ctl=("$build/tools/neighborlyctl/neighborlyctl" --server "http://$http")
echo
echo "The incident ($incident): the analytics job beside the article service, window by window."
# A victim needs 5 windows of CPI above its baseline; a move waits for 10.
for _ in $(seq 1 60); do
  "${ctl[@]}" rebalance 2>/dev/null | grep -q '^  move ' && break
  sleep 0.5
done
echo
echo "\$ neighborlyctl interference"
"${ctl[@]}" interference
echo
echo "\$ neighborlyctl advise content/Deployment/article-service"
"${ctl[@]}" advise content/Deployment/article-service
echo
echo "\$ neighborlyctl memory node-1"
"${ctl[@]}" memory node-1
echo
echo "\$ neighborlyctl rebalance"
"${ctl[@]}" rebalance
