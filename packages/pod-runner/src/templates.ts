import { readFileSync } from 'node:fs';
import { loadYaml } from '@kubernetes/client-node';
import { ConfigurationError, hasCode, InvalidArgumentError } from '@rollcall/core';
import type { ApiClient } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import type { PodTemplateSpec } from './pod.js';
import { assertRetryPolicy, type RetryPolicy } from './retry-policy.js';
import type { Task } from './task.js';
import { assertOverridesAllowed, assertTaskOverrides, type TaskOverrides } from './task-overrides.js';

/** Where a rule's pod template comes from: the template itself, a YAML file (a Pod, a PodTemplate or a template spec), or a PodTemplate object in the runner's namespace, read once at start. */
export type TemplateSource = PodTemplateSpec | { file: string } | { podTemplate: string };

/**
 * One rule of the ordered template list: a task whose type is one of
 * `taskTypes` (any, when absent) and whose tags include every pair of `tags`
 * gets this template. The first rule that matches wins; a rule with neither is
 * the default, and belongs last.
 */
export interface TemplateRule {
  /** Names the rule in statuses and errors. */
  name: string;
  taskTypes?: string[];
  tags?: Record<string, string>;
  template: TemplateSource;
  /** The template's container that runs the task, when it is not the first (a sidecar listed before it). Default the first container. */
  container?: string;
  /** Retries of a task this rule builds. Default none: one attempt. See {@link RetryPolicy}. */
  retry?: RetryPolicy;
  /** What a task may set beyond the template (env, labels, annotations). Default: anything. See {@link TaskOverrides}. */
  overrides?: TaskOverrides;
}

export interface ResolvedTemplate {
  rule: TemplateRule;
  index: number;
  template: PodTemplateSpec;
}


function problem(index: number, rule: TemplateRule | undefined, message: string, cause?: unknown): ConfigurationError {
  return new ConfigurationError(`templates[${index}]${rule?.name ? ` (${rule.name})` : ''}: ${message}`, { key: `templates[${index}]`, backend: BACKEND, cause });
}

/** The `{ metadata, spec }` of a Pod, a PodTemplate or a bare template spec. */
function asTemplateSpec(value: unknown): PodTemplateSpec | undefined {
  const object = value as { kind?: string; template?: PodTemplateSpec; metadata?: PodTemplateSpec['metadata']; spec?: PodTemplateSpec['spec'] } | undefined;
  if (!object || typeof object !== 'object') return undefined;
  if (object.kind === 'PodTemplate') return object.template;
  if (!object.spec) return undefined;
  const labels = object.metadata?.labels;
  const annotations = object.metadata?.annotations;
  return { metadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) }, spec: object.spec };
}

/** Reads every rule's template once: files now, PodTemplates from the API server. A missing or malformed one is a ConfigurationError naming the rule. */
export async function resolveTemplates(rules: readonly TemplateRule[], client: ApiClient, namespace: string): Promise<ResolvedTemplate[]> {
  if (!Array.isArray(rules) || rules.length === 0) throw new ConfigurationError('templates: at least one template rule is needed', { key: 'templates', backend: BACKEND });
  const names = new Set<string>();
  const resolved: ResolvedTemplate[] = [];
  for (const [index, rule] of rules.entries()) {
    if (!rule?.name || typeof rule.name !== 'string') throw problem(index, rule, 'a rule needs a name');
    if (names.has(rule.name)) throw problem(index, rule, `the name ${rule.name} is used twice`);
    names.add(rule.name);
    const source = rule.template as Partial<{ file: string; podTemplate: string }>;
    let template: PodTemplateSpec | undefined;
    if (typeof source?.file === 'string') {
      let text: string;
      try {
        text = readFileSync(source.file, 'utf8');
      } catch (err) {
        throw problem(index, rule, `cannot read ${source.file}: ${(err as Error).message}`, err);
      }
      try {
        template = asTemplateSpec(loadYaml(text));
      } catch (err) {
        throw problem(index, rule, `${source.file} is not valid YAML: ${(err as Error).message}`, err);
      }
    } else if (typeof source?.podTemplate === 'string') {
      try {
        template = asTemplateSpec(await client.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/podtemplates/${encodeURIComponent(source.podTemplate)}`, context: { verb: 'get', resource: 'podtemplates', namespace, name: source.podTemplate } }));
      } catch (err) {
        if (hasCode(err, 'NOT_FOUND')) throw problem(index, rule, `no PodTemplate ${source.podTemplate} in namespace ${namespace}`, err);
        throw err;
      }
    } else {
      template = asTemplateSpec(rule.template);
    }
    if (!template?.spec || !Array.isArray(template.spec.containers) || template.spec.containers.length === 0) throw problem(index, rule, 'the template has no containers (the first one runs the task)');
    if (rule.container !== undefined && !template.spec.containers.some((c) => c.name === rule.container)) {
      throw problem(index, rule, `container ${JSON.stringify(rule.container)} is not one of the template's containers (${template.spec.containers.map((c) => c.name).join(', ')})`);
    }
    if (rule.retry !== undefined) assertRetryPolicy(rule.retry, `templates[${index}].retry`);
    assertTaskOverrides(rule.overrides, `templates[${index}]`);
    resolved.push({ rule, index, template: structuredClone(template) });
  }
  return resolved;
}

/**
 * The rule a submitted task runs by: the first that matches, INVALID_ARGUMENT
 * when none does or when the task sets what its `overrides` do not allow.
 */
export function templateForSubmit(templates: readonly ResolvedTemplate[], task: Task): ResolvedTemplate {
  const template = selectTemplate(templates, task);
  if (!template) throw new InvalidArgumentError(`no template rule matches task ${task.taskId} of type ${task.taskType}, and there is no default rule`, { backend: BACKEND });
  assertOverridesAllowed(template.rule.overrides, template.rule.name, task);
  return template;
}

/** The first rule whose task types and tags the task matches, or undefined. */
export function selectTemplate(templates: readonly ResolvedTemplate[], task: Pick<Task, 'taskType' | 'tags'>): ResolvedTemplate | undefined {
  return templates.find(({ rule }) => {
    if (rule.taskTypes && !rule.taskTypes.includes(task.taskType)) return false;
    return Object.entries(rule.tags ?? {}).every(([key, value]) => task.tags?.[key] === value);
  });
}
