import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { unitDir } from '../../env/paths.js';

/** Annotations a test puts on a pod to tell kwok how the pod's container behaves. */
export const KWOK_POD_ANNOTATIONS = {
  /** The main container exits with this code once Running (a bare pod otherwise runs forever under kwok's defaults). */
  exitCode: 'kwok.rollcall.dev/exit-code',
  /** …after running this long: a Go duration, e.g. `800ms`, `2s`. Default at once. */
  runFor: 'kwok.rollcall.dev/run-for',
  /** …with this termination message (the container's `terminated.message`). */
  message: 'kwok.rollcall.dev/termination-message',
  /** The containers never start: each stays `waiting` with this reason (ErrImagePull, ImagePullBackOff, InvalidImageName, CreateContainerConfigError). */
  waitingReason: 'kwok.rollcall.dev/waiting-reason',
  /** A Running pod's readiness, as a failing or passing readiness probe sets it: `false` turns its Ready condition False, `true` back to True. */
  ready: 'kwok.rollcall.dev/ready',
} as const;


/** Containers of this name (in any pod) have kwok serve `kwokContainerLogPath()` as their log: append CRI-format lines (`<RFC3339Nano> stdout F <text>`) to it. */
export const KWOK_LOG_CONTAINER = 'rollcall-logs';

/** The log file of every {@link KWOK_LOG_CONTAINER} container; kwok follows it. */
export const kwokContainerLogPath = () => join(unitDir('kwok'), 'container-logs', `${KWOK_LOG_CONTAINER}.log`);

/** A Stage for live pods in `phase` that carry `annotation` (with `value`, when given); `rest` continues its spec after the weight (two-space indent). */
const podStage = (name: string, phase: string, annotation: string, rest: string, value?: string) => `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: ${name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['${phase}']
    - key: '.metadata.annotations["${annotation}"]'
${value === undefined ? "      operator: 'Exists'" : `      operator: 'In'\n      values: ['${value}']`}
  weight: 10000
${rest.replace(/^\n/, '')}`;

/** A Stage that sets a Running pod's Ready (and ContainersReady) condition to `status` while its {@link KWOK_POD_ANNOTATIONS.ready} annotation is `value`. */
const readinessStage = (name: string, value: 'true' | 'false', status: 'True' | 'False') =>
  podStage(
    name,
    'Running',
    KWOK_POD_ANNOTATIONS.ready,
    `
  next:
    # No timestamps: applied again to a pod already so, it changes nothing.
    statusTemplate: |
      conditions:
      - status: "${status}"
        type: Ready
      - status: "${status}"
        type: ContainersReady
`,
    value,
  );

/**
 * Stages of our own, loaded after kwokctl's defaults. Each selects pods by a
 * `kwok.rollcall.dev/*` annotation and has weight 10000, so where it matches it
 * wins over the default stage (weight 0) that matches the same pod; a pod without
 * these annotations follows the defaults exactly as before.
 */
const stages = () => `${podStage('rollcall-pod-exit', 'Running', KWOK_POD_ANNOTATIONS.exitCode, `
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["${KWOK_POD_ANNOTATIONS.runFor}"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      {{ $code := index .metadata.annotations "${KWOK_POD_ANNOTATIONS.exitCode}" }}
      {{ $message := or ( index .metadata.annotations "${KWOK_POD_ANNOTATIONS.message}" ) "" }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      {{ $origin := index $root.status.containerStatuses $index }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $code }}
            finishedAt: {{ $now | Quote }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            message: {{ $message | Quote }}
            startedAt: {{ $origin.state.running.startedAt | Quote }}
      {{ end }}
      phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
`)}---
${podStage('rollcall-pod-waiting', 'Pending', KWOK_POD_ANNOTATIONS.waitingReason, `
  next:
    # No timestamps: applied again to a pod already waiting, it changes nothing.
    statusTemplate: |
      {{ $reason := index .metadata.annotations "${KWOK_POD_ANNOTATIONS.waitingReason}" }}
      conditions:
      - status: "False"
        type: Ready
        reason: ContainersNotReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: {{ $reason | Quote }}
            message: {{ printf "kwok: %s" $reason | Quote }}
      {{ end }}
      phase: Pending
`).trimStart()}---
${readinessStage('rollcall-pod-not-ready', 'false', 'False').trimStart()}---
${readinessStage('rollcall-pod-ready-again', 'true', 'True').trimStart()}---
# The node lifecycle controller, marking a node whose heartbeats lapsed (an API server
# restart on a loaded machine), once wrote its status back without addresses; the default
# stages only add them at initialisation, and without an address the API server cannot
# reach the node for logs ("no preferred addresses found"). Put them back.
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rollcall-node-addresses
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.addresses'
      operator: 'DoesNotExist'
  weight: 10000
  next:
    statusTemplate: |
      addresses:
      {{ with NodeIP }}
      - address: {{ . | Quote }}
        type: InternalIP
      {{ end }}
      {{ with NodeName }}
      - address: {{ . | Quote }}
        type: Hostname
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: rollcall-container-logs
spec:
  logs:
  - containers: ['${KWOK_LOG_CONTAINER}']
    logsFile: '${kwokContainerLogPath()}'
    follow: true
`;

/** Where our stages are written, for a second `--config` after kwokctl's defaults. */
export const kwokStagesPath = () => join(unitDir('kwok'), 'rollcall-stages.yaml');

export function writeKwokStages(): void {
  mkdirSync(dirname(kwokContainerLogPath()), { recursive: true });
  writeFileSync(kwokContainerLogPath(), '', { flag: 'a' });
  writeFileSync(kwokStagesPath(), stages().trimStart());
}
