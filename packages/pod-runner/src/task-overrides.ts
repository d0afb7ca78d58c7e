import { ConfigurationError, InvalidArgumentError } from '@rollcall/core';
import { BACKEND } from './errors.js';
import type { Task } from './task.js';

/**
 * What a task may set on its pod beyond its template, per rule: the names of
 * environment variables, labels and annotations, a name ending in `*` a
 * prefix (`team.example.com/*`). A kind absent: any name (as before this
 * option existed); an empty list: none. Whoever may submit may otherwise set
 * any variable of the task container (`NODE_OPTIONS`, a proxy) and any label
 * a policy or a Service selects on.
 */
export interface TaskOverrides {
  env?: readonly string[];
  labels?: readonly string[];
  annotations?: readonly string[];
}

const KINDS = ['env', 'labels', 'annotations'] as const;

/** A rule's `overrides` as given: lists of non-empty strings. `where` names the rule in the error. */
export function assertTaskOverrides(overrides: unknown, where: string): void {
  if (overrides === undefined) return;
  if (typeof overrides !== 'object' || overrides === null) throw new ConfigurationError(`${where}.overrides must be an object of name lists`, { key: `${where}.overrides`, backend: BACKEND });
  for (const [kind, names] of Object.entries(overrides)) {
    if (!(KINDS as readonly string[]).includes(kind)) throw new ConfigurationError(`${where}.overrides.${kind} is not one of ${KINDS.join(', ')}`, { key: `${where}.overrides.${kind}`, backend: BACKEND });
    if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || n === '' || n === '*')) {
      throw new ConfigurationError(`${where}.overrides.${kind} must list names (a prefix ends in *; leave the kind out to allow any)`, { key: `${where}.overrides.${kind}`, backend: BACKEND });
    }
  }
}

const allows = (names: readonly string[], name: string) => names.some((n) => (n.endsWith('*') ? name.startsWith(n.slice(0, -1)) : name === n));

/** Refuses, INVALID_ARGUMENT naming the rule and the first name, a task that sets what its rule's `overrides` do not list. */
export function assertOverridesAllowed(overrides: TaskOverrides | undefined, ruleName: string, task: Pick<Task, 'taskId' | 'env' | 'labels' | 'annotations'>): void {
  if (!overrides) return;
  for (const kind of KINDS) {
    const listed = overrides[kind];
    if (!listed) continue;
    const refused = Object.keys(task[kind] ?? {}).find((name) => !allows(listed, name));
    if (refused !== undefined) {
      throw new InvalidArgumentError(`task ${task.taskId}: template rule ${ruleName} does not let a task set ${kind === 'env' ? 'the environment variable' : kind === 'labels' ? 'the label' : 'the annotation'} ${JSON.stringify(refused)} (its overrides.${kind}: ${listed.length ? listed.join(', ') : 'none'})`, { backend: BACKEND });
    }
  }
}
