import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { doctorCommand } from './commands/doctor.js';
import { tasksCancelCommand, tasksListCommand, tasksLogsCommand, tasksShowCommand } from './commands/tasks.js';
import { leaderCommand, locksCommand, membersCommand } from './commands/listings.js';
import { manifestRoles, manifestsCommand } from './commands/manifests.js';
import { migrateStatusCommand } from './commands/migrate-status.js';
import { releaseCommand } from './commands/release.js';
import { watchCommand } from './commands/watch.js';
import { demoCommand } from './demo/demo.js';
import { demoPodsCommand } from './demo/pods.js';
import { demoNode } from './demo/node.js';
import { ExitCode, exitCodesHelp, formatError, toCliError, usageError } from './errors.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const CONFIG_HELP = `
Configuration (the library's three forms; later ones win):
  --config <file>          JSON, object form {"type":"etcd","etcd":{"endpoints":["http://127.0.0.1:2379"]}}
                           or flat form {"registry.type":"etcd","registry.etcd.endpoints":"http://127.0.0.1:2379"}
  REGISTRY_* variables     REGISTRY_TYPE=sqlite REGISTRY_SQLITE_PATH=/var/lib/app/rollcall.db
  -o key=value             -o registry.type=sqlite -o registry.sqlite.path=rollcall.db (repeatable; "registry." optional)
  --type, --cluster        shorthands for -o registry.type=..., -o registry.cluster=...
Every key and default: the README of @rollcall/core and of each backend package
(https://github.com/rollcall/rollcall/tree/main/packages/core#configuration).`;

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

function withConfig(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'configuration file, JSON (object or flat form)')
    .option('-o, --option <key=value>', 'a configuration key, flat form (repeatable)', collect)
    .option('-t, --type <type>', 'registry.type: memory, sqlite, mysql, postgres, etcd, zookeeper, kubernetes')
    .option('-c, --cluster <name>', 'registry.cluster (default "default")');
}

/** `--metrics-port` on the commands that run until stopped. */
function withMetrics(cmd: Command): Command {
  return cmd
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://<host>:<port>/metrics while running (0: any free port)')
    .option('--metrics-host <address>', 'the address the metrics endpoint binds (default 127.0.0.1: this host only; 0.0.0.0 to be scraped from elsewhere)');
}

function withOutput(cmd: Command): Command {
  return cmd.addOption(new Option('--output <format>', 'output format').choices(['table', 'json']).default('table')).option('--json', 'same as --output json');
}

/** `--check`: a STALE entry makes the listing exit 8, for scripts and probes. */
function withCheck(cmd: Command): Command {
  return cmd.option('--check', 'exit 8 when a holder or member shown is STALE (its last renewal older than its lease, by this machine\'s clock; a pod member is judged by its pod, never STALE)');
}

/** Examples after a command's help; `config: false` for commands that take no configuration flags (`tasks`). */
function examples(cmd: Command, lines: string[], options: { config?: boolean } = {}): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n${options.config === false ? '' : `${CONFIG_HELP}\n`}`);
}

/** Builds the program; `setExit` receives the exit code of the command that ran. */
export function program(setExit: (code: number) => void): Command {
  const root = new Command('rollcall')
    .description('Members, leaders and locks of a Rollcall cluster, on any backend: look, watch, act, check.')
    .version(VERSION, '-V, --version')
    .showHelpAfterError(false)
    .configureOutput({ outputError: () => {} })
    .exitOverride();
  root.addHelpText(
    'after',
    `\nExamples:\n  $ rollcall demo                                   # a live failover on a local sqlite file\n  $ rollcall members worker -t sqlite -o sqlite.path=rollcall.db\n  $ REGISTRY_TYPE=etcd REGISTRY_ETCD_ENDPOINTS=http://10.0.0.5:2379 rollcall leader scheduler\n  $ rollcall doctor -t kubernetes -o kubernetes.namespace=prod --role member\n${CONFIG_HELP}\n\n${exitCodesHelp()}\n`,
  );

  const members = withCheck(withOutput(withConfig(root.command('members').argument('[role]', 'only this role').description('list the members the registry sees: id, last heartbeat (STALE when older than its lease), uptime, payload'))));
  examples(members, ['rollcall members -t sqlite -o sqlite.path=/var/lib/app/rollcall.db', 'rollcall members worker --config rollcall.json --json | jq \'.[] | select(.payload.status == "BUSY")\'']);
  members.action(async (role: string | undefined, opts) => setExit(await membersCommand(role, opts)));

  const leader = withCheck(withOutput(withConfig(root.command('leader').argument('[election]', 'one election; all of them when left out').description('show the leader of an election and its fencing token (every election without an argument); STALE when its last renewal is older than its lease'))));
  examples(leader, ['rollcall leader scheduler -t etcd -o etcd.endpoints=http://127.0.0.1:2379', 'REGISTRY_TYPE=sqlite rollcall leader --json', 'rollcall leader scheduler --config rollcall.json --check   # exit 8 when the leader is STALE']);
  leader.action(async (election: string | undefined, opts) => setExit(await leaderCommand(election, opts)));

  const locks = withCheck(withOutput(withConfig(root.command('locks').description('list every lock: holder, fencing token, how long held, last renewal (STALE when older than its lease)'))));
  examples(locks, ['rollcall locks -t mysql -o mysql.host=db -o mysql.user=app -o mysql.database=app', 'rollcall locks --config rollcall.json --output json']);
  locks.action(async (opts) => setExit(await locksCommand(opts)));

  const watch = withMetrics(withOutput(withConfig(root.command('watch').description('print the current members, leaders and locks, then every change as it happens, until Ctrl-C'))));
  examples(watch, ['rollcall watch -t zookeeper -o zookeeper.connectString=zk1:2181', 'rollcall watch --config rollcall.json --json    # one JSON object per line', 'rollcall watch --config rollcall.json --metrics-port 9464 > /dev/null   # a Prometheus exporter of the cluster']);
  watch.action(async (opts) => setExit(await watchCommand(opts)));

  const release = withOutput(withConfig(root.command('release').argument('<lock>', 'the lock to free').description('force-release a lock whatever its holder (asks first); prints the fencing token it broke').option('-y, --yes', 'do not ask for confirmation')));
  examples(release, ['rollcall release nightly-report -t sqlite -o sqlite.path=rollcall.db', 'rollcall release nightly-report --config rollcall.json --yes']);
  release.action(async (name: string, opts) => releaseCommand(name, opts));

  const doctor = withOutput(
    withConfig(
      root
        .command('doctor')
        .description('check the configuration, the connection and, on Kubernetes, every RBAC permission the role needs (SelfSubjectAccessReview)')
        .addOption(new Option('--role <role>', 'what the component does: coordinator (campaigns and locks), member (announces and discovers), pod-runner (runs tasks as pods) or viewer (read commands, dashboards)').choices(['coordinator', 'member', 'pod-runner', 'viewer']).default('coordinator')),
    ),
  );
  examples(doctor, ['rollcall doctor -t kubernetes -o kubernetes.namespace=prod --role member', 'REGISTRY_TYPE=etcd REGISTRY_ETCD_ENDPOINTS=http://127.0.0.1:2379 rollcall doctor --json']);
  doctor.action(async (opts) => setExit(await doctorCommand(opts)));

  const manifests = root
    .command('manifests')
    .description('print the ServiceAccount, Role and RoleBinding a component needs on Kubernetes, for kubectl apply -f -')
    .addOption(new Option('--role <role>', 'what the component does: coordinator (campaigns and locks), member (announces and discovers), pod-runner (runs tasks as pods), viewer (read commands, dashboards); required unless --admission').choices(manifestRoles()))
    .option('--namespace <namespace>', 'the namespace of the records (registry.kubernetes.namespace); with --admission, the namespace to opt in')
    .addOption(new Option('--lock <lock>', 'registry.kubernetes.lock: configmap adds the ConfigMap permissions').choices(['lease', 'configmap']))
    .addOption(new Option('--liveness <mode>', 'registry.member.liveness: pod adds get/list/watch on endpointslices').choices(['heartbeat', 'reaper', 'pod']).default('heartbeat'))
    .option('--admission', 'instead of a role: the ValidatingAdmissionPolicies that confine every account to its own Leases (cluster admin, Kubernetes >= 1.30)')
    .option('--fencing', "with --role pod-runner, instead of its Role: the policy that refuses a deposed runner term's writes on the server (cluster admin, Kubernetes >= 1.30; second-generation runner)")
    .option('--runner <name>', "with --role pod-runner: the runner's name; its Role then gets and updates only that runner's term Lease, pod-runner-<name>-term");
  manifests.addHelpText('after', `\nExamples:\n  $ rollcall manifests --role coordinator --namespace prod | kubectl apply -f -\n  $ rollcall manifests --role member --namespace prod --lock configmap > rollcall-member.yaml\n  $ rollcall manifests --admission --namespace prod | kubectl apply -f -     # as a cluster admin\n`);
  manifests.action((opts) => manifestsCommand(opts));
  const migrate = root.command('migrate').description('a zero-downtime move between backends (registry.type=migrate): see docs/migrating.md');
  const status = withOutput(withConfig(migrate.command('status').description('members on from only, to only or both; each election and lock on each side; the phase, and whether the next step is safe (exit 0) or not (exit 9)')));
  examples(status, [
    'rollcall migrate status -t migrate -o migrate.from.type=zookeeper -o migrate.from.zookeeper.connectString=zk1:2181 -o migrate.to.type=kubernetes -o migrate.to.kubernetes.namespace=prod',
    'REGISTRY_TYPE=migrate REGISTRY_MIGRATE_FROM_TYPE=etcd REGISTRY_MIGRATE_FROM_ETCD_ENDPOINTS=http://10.0.0.5:2379 REGISTRY_MIGRATE_TO_TYPE=kubernetes rollcall migrate status --json',
  ]);
  status.action(async (opts) => setExit(await migrateStatusCommand(opts)));
  examples(migrate, ['rollcall migrate status -t migrate -o migrate.from.type=sqlite -o migrate.from.sqlite.path=old.db -o migrate.to.type=sqlite -o migrate.to.sqlite.path=new.db'], { config: false });
  const withPods = (cmd: Command) =>
    withOutput(
      cmd
        .option('-n, --namespace <namespace>', "the runner's namespace (default REGISTRY_KUBERNETES_NAMESPACE, else the kubeconfig's)")
        .option('--kubeconfig <file>', 'kubeconfig (default REGISTRY_KUBERNETES_KUBECONFIG, KUBECONFIG, ~/.kube/config)')
        .option('--context <name>', 'kubeconfig context')
        .option('--runner <name>', "the runner's name, its rollcall.dev/runner label", 'rollcall'),
    );
  const tasks = root.command('tasks').description("tasks of a pod runner (@rollcall/pod-runner), read from their task records and pods: list, show, logs, cancel");
  withPods(tasks.command('list', { isDefault: true }).description('every task id and attempt, from its task record and its pod (queued; running; ended, acknowledged or not, its pod gone or not): phase, pending cause or reason, exit code, age, source')).action(async (opts) => tasksListCommand(opts));
  withPods(tasks.command('show').argument('<task>', 'task id').description("one task's status, exit code and result: from its task record (its pod's while it runs); a first-generation runner's task from its latest pod")).action(async (id: string, opts) => tasksShowCommand(id, opts));
  withPods(tasks.command('logs').argument('<task>', 'task id').description("a task's log").option('-f, --follow', 'until the container exits; a dropped stream resumes without repeating a line').option('--tail <lines>', 'only the last lines').option('--timestamps', "each line with the container's timestamp").option('--log-dir <dir>', "the runner's log directory (its logs.dir), read when the task's pod is gone; default the runner's default, <tmpdir>/rollcall-task-logs")).action(async (id: string, opts) => tasksLogsCommand(id, opts));
  withPods(tasks.command('cancel').argument('<task>', 'task id').description("cancel a task, queued or running: asked on its task record, then the leading runner's confirmation is awaited (exit 11 when none comes; the request stays)").option('--reason <text>', 'recorded on the task').option('--wait <seconds>', "how long to wait for the leading runner's confirmation; 0: do not wait", '30')).action(async (id: string, opts) => setExit(await tasksCancelCommand(id, opts)));
  examples(tasks, ['rollcall tasks -n batch', 'rollcall tasks show ingest-2026-12-03 -n batch --json', 'rollcall tasks logs ingest-2026-12-03 -n batch -f', 'rollcall tasks cancel ingest-2026-12-03 -n batch --reason "bad input"'], { config: false });

  const demo = withMetrics(withConfig(root.command('demo').description('run a small scheduler cluster as separate processes (3 masters, 4 workers) and show a failover live').option('--lease <ms>', 'election and member lease, milliseconds', '3000')));
  examples(demo, ['rollcall demo', 'rollcall demo -t etcd -o etcd.endpoints=http://127.0.0.1:2379', 'rollcall demo | cat            # plain lines instead of the live view']);
  demo.option('--pods', 'instead: a pod-runner pair on Kubernetes (the test control plane and its kwok) running tasks of two types on two templates; the leader is killed mid-run and the other re-attaches (with --metrics-port, each runner serves its metrics: runner-a on the port, runner-b on the next)');
  demo.action(async (opts) => setExit(opts.pods ? await demoPodsCommand(opts) : await demoCommand(opts)));

  root
    .command('demo-node', { hidden: true })
    .requiredOption('--kind <kind>')
    .requiredOption('--id <id>')
    .requiredOption('--config <file>')
    .option('--pods <file>')
    .option('--metrics-port <port>')
    .action(async (opts) => demoNode(opts));

  for (const cmd of [...root.commands, ...migrate.commands]) cmd.exitOverride().configureOutput({ outputError: () => {} });
  return root;
}

/**
 * `rollcall -t sqlite members` as `rollcall members -t sqlite`: options given
 * before the command move after it (and its subcommand: `migrate status`), as
 * kubectl and gh take them. Help and version stay where they are; anything
 * this cannot place is left for commander to judge.
 */
export function hoistOptions(root: Command, argv: readonly string[]): string[] {
  const takesValue = new Map<string, boolean>();
  const walk = (cmd: Command) => {
    for (const o of cmd.options) for (const flag of [o.short, o.long]) if (flag) takesValue.set(flag, o.required || o.optional);
    cmd.commands.forEach(walk);
  };
  root.commands.forEach(walk);
  const args = argv.slice(2);
  const leading: string[] = [];
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-') && args[i] !== '--') {
    const flag = args[i]!.split('=')[0]!;
    if (!takesValue.has(flag)) return [...argv]; // --help, --version, or unknown: commander decides
    const inline = args[i]!.includes('=') || (/^-[^-]/.test(args[i]!) && args[i]!.length > 2);
    const width = takesValue.get(flag) && !inline ? 2 : 1;
    leading.push(...args.slice(i, i + width));
    i += width;
  }
  const command = root.commands.find((c) => c.name() === args[i] || c.aliases().includes(args[i] ?? ''));
  if (leading.length === 0 || !command) return [...argv];
  let end = i + 1;
  if (command.commands.some((c) => c.name() === args[end])) end++;
  return [...argv.slice(0, 2), ...args.slice(i, end), ...leading, ...args.slice(end)];
}

/** Runs the CLI; resolves with the exit code. Errors are one line on stderr. */
export async function main(argv: string[]): Promise<number> {
  let exit: number = ExitCode.OK;
  const cli = program((code) => (exit = code));
  try {
    await cli.parseAsync(hoistOptions(cli, argv));
    return exit;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return ExitCode.OK;
      if (err.code === 'commander.executeSubCommandAsync') return err.exitCode;
      const e = usageError(err.message.replace(/^error: /, ''), 'see `rollcall --help`, or `rollcall <command> --help`');
      process.stderr.write(formatError(e) + '\n');
      return e.exitCode;
    }
    const e = toCliError(err);
    process.stderr.write(formatError(e) + '\n');
    return e.exitCode;
  }
}
